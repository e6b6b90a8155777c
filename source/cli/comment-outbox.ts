import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ulid } from 'ulid';
import { validateComment, type CommentRecord } from '../contracts/index.js';
import { UserError } from '../errors.js';

/**
 * The agent's side of a runner's mailbox (docs/runners/level2.md, "An
 * agent's comments"): an agent run by `pak2 runner` hands a comment to the
 * runner as `$PAK2_OUTBOX/<key>.json` (`{"body", "blocking"}`), and the
 * runner writes the answer comment to `$PAK2_INBOX/<key>.json`.
 */
export interface OutboxComment {
  body: string;
  blocking: boolean;
}

/**
 * Writes one comment to the outbox: a temp file (`.<key>.tmp`, a name the
 * runner never takes), then renamed to `<key>.json`, so the runner never
 * reads half a file.
 *
 * @returns the key, a ULID (`ulid` package).
 * @throws UserError `PAK2_OUTBOX …` when the directory is missing or not writable.
 */
export async function writeOutbox(outbox: string, comment: OutboxComment): Promise<string> {
  const key = ulid();
  const temp = path.join(outbox, `.${key}.tmp`);
  try {
    const stat = await fsp.stat(outbox);
    if (!stat.isDirectory()) throw new UserError(`PAK2_OUTBOX ${outbox}: not a directory`);
    await fsp.writeFile(temp, `${JSON.stringify({ body: comment.body, blocking: comment.blocking })}\n`, { flag: 'wx' });
    await fsp.rename(temp, path.join(outbox, `${key}.json`));
  } catch (error) {
    await fsp.rm(temp, { force: true }).catch(() => undefined);
    if (error instanceof UserError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new UserError(`PAK2_OUTBOX ${outbox}: ${code === 'ENOENT' ? 'no such directory' : (error as Error).message}`, { exitCode: 1 });
  }
  return key;
}

/** The answer comment in `$PAK2_INBOX/<key>.json`, once it is there and whole; undefined before. */
export function readInbox(inbox: string, key: string): CommentRecord | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(inbox, `${key}.json`), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const value: unknown = JSON.parse(text);
    return validateComment(value).length === 0 ? (value as CommentRecord) : undefined;
  } catch {
    return undefined; // not whole yet
  }
}

/** Polls `probe` every `everyMs` until it returns a value or `timeoutMs` passed (then undefined). */
export async function pollFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, everyMs = 250): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() >= end) return undefined;
    await new Promise((resolve) => setTimeout(resolve, Math.min(everyMs, Math.max(1, end - Date.now()))));
  }
}
