import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { isErrno } from '../errors.js';
import { appendJsonLine, readJsonFile, writeJsonAtomic } from './files.js';
/** The conversation id pattern: `c-<yyyymmddThhmmss>-<8 hex>`. */
export const CONVERSATION_ID_PATTERN = /^c-\d{8}T\d{6}-[0-9a-f]{8}$/;
function conversationDir(paths, id) {
    if (!CONVERSATION_ID_PATTERN.test(id))
        throw new Error(`conversation id ${JSON.stringify(id)} is not of the form c-<time>-<hex>`);
    return path.join(paths.conversationsDir, id);
}
/** Starts a conversation; `startedBy` is "system" for the startup note, "operator" otherwise. */
export async function openConversation(paths, startedBy, now = new Date()) {
    const stamp = now.toISOString().replace(/[-:]/g, '').slice(0, 15);
    const meta = { id: `c-${stamp}-${randomUUID().slice(0, 8)}`, started_by: startedBy, started_at: now.toISOString(), channel: 'filesystem' };
    await writeJsonAtomic(path.join(conversationDir(paths, meta.id), 'meta.json'), meta);
    return meta;
}
/** The most recently started conversation, if any. */
export async function latestConversation(paths) {
    let names;
    try {
        names = await fsp.readdir(paths.conversationsDir);
    }
    catch (error) {
        if (isErrno(error, 'ENOENT'))
            return undefined;
        throw error;
    }
    const ids = names.filter((n) => CONVERSATION_ID_PATTERN.test(n)).sort();
    for (const id of ids.reverse()) {
        const read = await readJsonFile(path.join(paths.conversationsDir, id, 'meta.json'));
        if (read.ok)
            return read.value;
    }
    return undefined;
}
/** Appends a message to a conversation's messages.jsonl. */
export async function appendConversationMessage(paths, id, message, now = new Date()) {
    const full = { ...message, ts: message.ts ?? now.toISOString() };
    await appendJsonLine(path.join(conversationDir(paths, id), 'messages.jsonl'), full);
    return full;
}
/** The last `limit` messages of a conversation (malformed lines are skipped). */
export async function readConversationMessages(paths, id, limit = 200) {
    let text;
    try {
        text = await fsp.readFile(path.join(conversationDir(paths, id), 'messages.jsonl'), 'utf8');
    }
    catch {
        return [];
    }
    const messages = [];
    for (const line of text.split('\n')) {
        if (!line.trim())
            continue;
        try {
            const value = JSON.parse(line);
            if (typeof value.text === 'string' && typeof value.sender === 'string')
                messages.push(value);
        }
        catch {
            // a torn or foreign line: skipped, never rewritten
        }
    }
    return messages.slice(-limit);
}
//# sourceMappingURL=conversations.js.map