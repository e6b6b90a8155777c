import fsp from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../errors.js';
import { readJsonFile, writeJsonAtomic } from './files.js';
const READ_STATE = '.read.json';
/** `<runtime-root>/inbox/<[garden].name>/`, the garden's reply directory. */
export function replyDir(paths, config) {
    return path.join(paths.inboxDir, config.gardenName);
}
async function readState(dir) {
    const read = await readJsonFile(path.join(dir, READ_STATE));
    if (read.ok && Array.isArray(read.value.read))
        return new Set(read.value.read);
    return new Set();
}
/**
 * The reply notes, newest first, each marked unread until {@link markNoteRead}.
 * Bodies are cut to `maxBody` characters.
 */
export async function listInbox(paths, config, maxBody = 4000) {
    const dir = replyDir(paths, config);
    let names;
    try {
        names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.md'));
    }
    catch (error) {
        if (isErrno(error, 'ENOENT'))
            return [];
        throw error;
    }
    const read = await readState(dir);
    const notes = await Promise.all(names.map(async (name) => {
        const file = path.join(dir, name);
        try {
            const [text, stat] = await Promise.all([fsp.readFile(file, 'utf8'), fsp.stat(file)]);
            const first = text.split('\n').find((l) => l.trim()) ?? name;
            return { name, path: file, title: first.replace(/^#+\s*/, '').trim(), body: text.slice(0, maxBody), modifiedAt: stat.mtime.toISOString(), unread: !read.has(name) };
        }
        catch {
            return undefined;
        }
    }));
    return notes.filter((n) => !!n).sort((a, b) => (a.modifiedAt === b.modifiedAt ? b.name.localeCompare(a.name) : b.modifiedAt.localeCompare(a.modifiedAt)));
}
/** Marks a note read (kept in the reply directory's `.read.json`). */
export async function markNoteRead(paths, config, name) {
    const dir = replyDir(paths, config);
    const read = await readState(dir);
    if (read.has(name))
        return;
    read.add(path.basename(name));
    await writeJsonAtomic(path.join(dir, READ_STATE), { read: [...read].sort() });
}
//# sourceMappingURL=inbox.js.map