import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GardenConfig, GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { loadWriteFileAtomic, readJsonFile, writeJsonAtomic } from './files.js';
import { storeOf, type GardenStore } from './backend.js';
import type { StoredNote } from './documents.js';

/** A reply note in `<runtime-root>/inbox/<garden-name>/`. */
export interface InboxNote {
  /** File name, e.g. `2026-11-29T0912-startup.md`. */
  name: string;
  path: string;
  /** First heading or first line. */
  title: string;
  body: string;
  modifiedAt: string;
  unread: boolean;
}

const READ_STATE = '.read.json';

/** `<runtime-root>/inbox/<[garden].name>/`, the garden's reply directory. */
export function replyDir(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>): string {
  return path.join(paths.inboxDir, config.gardenName);
}

async function readState(dir: string): Promise<Set<string>> {
  const read = await readJsonFile(path.join(dir, READ_STATE));
  if (read.ok && Array.isArray((read.value as { read?: unknown }).read)) return new Set((read.value as { read: string[] }).read);
  return new Set();
}

/** The read state of a store's reply notes (`inbox/<name>/.read.json`'s `read`). */
async function storedReadState(store: GardenStore, gardenName: string): Promise<Set<string>> {
  const record = await store.documentRecord('inbox-read', gardenName);
  return new Set(Array.isArray((record as { read?: unknown } | undefined)?.read) ? (record as { read: string[] }).read : []);
}

/** A note's first heading or first line, without its `#`s. */
function titleOf(text: string, name: string): string {
  return (text.split('\n').find((l) => l.trim()) ?? name).replace(/^#+\s*/, '').trim();
}

/** Newest first; the same time: the later name first. */
function newestFirst(a: { name: string; modifiedAt: string }, b: { name: string; modifiedAt: string }): number {
  return a.modifiedAt === b.modifiedAt ? b.name.localeCompare(a.name) : b.modifiedAt.localeCompare(a.modifiedAt);
}

/**
 * On a store: takes the notes an agent wrote as files into this machine's
 * reply directory into the store (each once, again when its text changes),
 * so every server lists them. The files stay where the agent put them.
 */
async function adoptReplyFiles(store: GardenStore, dir: string, gardenName: string): Promise<void> {
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.md'));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return;
    throw error;
  }
  if (names.length === 0) return;
  const stored = new Map((await store.documentRecords('inbox-note', `${gardenName}/`)).map(({ key, record }) => [key, record as StoredNote]));
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const [text, stat] = await Promise.all([fsp.readFile(file, 'utf8'), fsp.stat(file)]);
      if (stored.get(`${gardenName}/${name}`)?.text === text) continue;
      await store.putDocument('inbox-note', `${gardenName}/${name}`, { text, modified_at: stat.mtime.toISOString() } satisfies StoredNote);
    } catch {
      // gone meanwhile, or not readable: the next listing tries again
    }
  }
}

/**
 * The reply notes, newest first, each marked unread until {@link markNoteRead}.
 * Bodies are cut to `maxBody` characters. On a store, the notes are the
 * store's, with those an agent left in this machine's reply directory
 * taken in first.
 */
export async function listInbox(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, maxBody = 4000): Promise<InboxNote[]> {
  const dir = replyDir(paths, config);
  const store = storeOf(paths);
  if (store) {
    await adoptReplyFiles(store, dir, config.gardenName);
    const read = await storedReadState(store, config.gardenName);
    const notes: InboxNote[] = [];
    for (const { key, record } of await store.documentRecords('inbox-note', `${config.gardenName}/`)) {
      const name = key.slice(config.gardenName.length + 1);
      const note = record as Partial<StoredNote> | null;
      if (!name.endsWith('.md') || name.includes('/') || typeof note?.text !== 'string' || typeof note.modified_at !== 'string') continue;
      notes.push({ name, path: path.join(dir, name), title: titleOf(note.text, name), body: note.text.slice(0, maxBody), modifiedAt: note.modified_at, unread: !read.has(name) });
    }
    return notes.sort(newestFirst);
  }
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.md'));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw error;
  }
  const read = await readState(dir);
  const notes = await Promise.all(
    names.map(async (name): Promise<InboxNote | undefined> => {
      const file = path.join(dir, name);
      try {
        const [text, stat] = await Promise.all([fsp.readFile(file, 'utf8'), fsp.stat(file)]);
        return { name, path: file, title: titleOf(text, name), body: text.slice(0, maxBody), modifiedAt: stat.mtime.toISOString(), unread: !read.has(name) };
      } catch {
        return undefined;
      }
    }),
  );
  return notes.filter((n): n is InboxNote => !!n).sort(newestFirst);
}

/** Marks a note read (kept in the reply directory's `.read.json`). */
export async function markNoteRead(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, name: string): Promise<void> {
  const store = storeOf(paths);
  if (store) {
    await store.withDocumentLock('inbox-read', config.gardenName, async () => {
      const read = await storedReadState(store, config.gardenName);
      if (read.has(name)) return;
      read.add(path.basename(name));
      await store.putDocument('inbox-read', config.gardenName, { read: [...read].sort() });
    });
    return;
  }
  const dir = replyDir(paths, config);
  const read = await readState(dir);
  if (read.has(name)) return;
  read.add(path.basename(name));
  await writeJsonAtomic(path.join(dir, READ_STATE), { read: [...read].sort() });
}

/** The reply directory name before `[garden].name` existed. */
export const LEGACY_REPLY_DIR = 'garden';

/** What {@link ensureReplyDir} found and did. */
export type ReplyDirOutcome = 'exists' | 'created' | 'renamed_legacy' | 'kept_both';

/**
 * Makes sure the reply surface exists before a reply is delivered (seed 002,
 * the PAK2.toml paragraph). With a non-default `[garden].name`, a legacy
 * `inbox/garden/` is renamed to `inbox/<name>/` on first delivery, but only if
 * the target does not exist yet; when both exist, both are kept and replies go
 * to the configured one.
 *
 * @returns the reply directory and what was done.
 */
export async function ensureReplyDir(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>): Promise<{ dir: string; outcome: ReplyDirOutcome }> {
  const dir = replyDir(paths, config);
  const legacy = path.join(paths.inboxDir, LEGACY_REPLY_DIR);
  const exists = async (p: string) => fsp.stat(p).then((s) => s.isDirectory(), () => false);
  const hasTarget = await exists(dir);
  if (config.gardenName !== LEGACY_REPLY_DIR && (await exists(legacy))) {
    if (hasTarget) return { dir, outcome: 'kept_both' };
    await fsp.rename(legacy, dir);
    return { dir, outcome: 'renamed_legacy' };
  }
  if (hasTarget) return { dir, outcome: 'exists' };
  await fsp.mkdir(dir, { recursive: true });
  return { dir, outcome: 'created' };
}

/**
 * Delivers a reply note: ensures the reply directory, then writes
 * `<stamp>-<slug>.md` atomically. Returns the note's path (on a store,
 * where the note's file would be: the note is the store's).
 */
export async function deliverReplyNote(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, slug: string, text: string, now: Date = new Date()): Promise<string> {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const name = `${stamp}-${slug.replace(/[^a-z0-9-]+/gi, '-').toLowerCase()}.md`;
  const body = text.endsWith('\n') ? text : `${text}\n`;
  const store = storeOf(paths);
  if (store) {
    // modified_at is when it was written, as a file's mtime is (not `now`, which names it).
    await store.putDocument('inbox-note', `${config.gardenName}/${name}`, { text: body, modified_at: new Date().toISOString() } satisfies StoredNote);
    return path.join(replyDir(paths, config), name);
  }
  const { dir } = await ensureReplyDir(paths, config);
  const file = path.join(dir, name);
  const writeFileAtomic = await loadWriteFileAtomic();
  await writeFileAtomic(file, body);
  return file;
}
