import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GardenConfig, GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { loadWriteFileAtomic, readJsonFile, writeJsonAtomic } from './files.js';

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

/**
 * The reply notes, newest first, each marked unread until {@link markNoteRead}.
 * Bodies are cut to `maxBody` characters.
 */
export async function listInbox(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, maxBody = 4000): Promise<InboxNote[]> {
  const dir = replyDir(paths, config);
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
        const first = text.split('\n').find((l) => l.trim()) ?? name;
        return { name, path: file, title: first.replace(/^#+\s*/, '').trim(), body: text.slice(0, maxBody), modifiedAt: stat.mtime.toISOString(), unread: !read.has(name) };
      } catch {
        return undefined;
      }
    }),
  );
  return notes.filter((n): n is InboxNote => !!n).sort((a, b) => (a.modifiedAt === b.modifiedAt ? b.name.localeCompare(a.name) : b.modifiedAt.localeCompare(a.modifiedAt)));
}

/** Marks a note read (kept in the reply directory's `.read.json`). */
export async function markNoteRead(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, name: string): Promise<void> {
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
 * `<stamp>-<slug>.md` atomically. Returns the note's path.
 */
export async function deliverReplyNote(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, slug: string, text: string, now: Date = new Date()): Promise<string> {
  const { dir } = await ensureReplyDir(paths, config);
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const file = path.join(dir, `${stamp}-${slug.replace(/[^a-z0-9-]+/gi, '-').toLowerCase()}.md`);
  const writeFileAtomic = await loadWriteFileAtomic();
  await writeFileAtomic(file, text.endsWith('\n') ? text : `${text}\n`);
  return file;
}
