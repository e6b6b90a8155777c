import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

/**
 * The files pak2 keeps under `<runtime-root>/.cache/` (the listing cache, the
 * ledger record, the goals key) carry a digest of their own body, so a file
 * changed by anything but pak2 (a hand edit, a torn copy) is not believed:
 * a cache that lies could hide an open goal (docs/goal/level2.md, "The
 * listing cache").
 */

/** The digest field's name in a sealed cache file. */
const DIGEST = 'digest';

function digestOf(body: string): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 32);
}

/**
 * The text of a cache file: `value` as one JSON line with a `digest` field
 * (sha-256 of the JSON of the other fields, 32 hex digits) last.
 */
export function sealCache(value: object): string {
  const body = JSON.stringify(value);
  const digest = digestOf(body);
  return body === '{}' ? `{"${DIGEST}":"${digest}"}\n` : `${body.slice(0, -1)},"${DIGEST}":"${digest}"}\n`;
}

/**
 * Reads the text of a cache file written by {@link sealCache}.
 *
 * @returns `{ value }` when it parses and its digest matches its body;
 * `{ damaged }` with a few words on why not (not JSON, no digest, a digest
 * that does not match: changed outside pak2).
 */
export function unsealCache(text: string): { value: Record<string, unknown> } | { damaged: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { damaged: 'not JSON' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { damaged: 'not a JSON object' };
  const record = value as Record<string, unknown>;
  const digest = record[DIGEST];
  if (typeof digest !== 'string') return { damaged: 'it has no digest' };
  delete record[DIGEST];
  if (digestOf(JSON.stringify(record)) !== digest) return { damaged: 'its digest does not match its content: changed outside pak2' };
  return { value: record };
}

/**
 * Writes `value` sealed ({@link sealCache}) to `file`: a temp file renamed
 * over it, so a reader sees the old file or the new one; the directory is
 * made first.
 *
 * @throws the file-system error (a read-only runtime root).
 */
export function writeSealedSync(file: string, value: object): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, sealCache(value));
  fs.renameSync(temp, file);
}

let sealSequence = 0;

/**
 * {@link writeSealedSync} without blocking the event loop (a write in the
 * path of every goal transition): its temp file is its own
 * (`<file>.<pid>.<n>.tmp`), so it never meets another writer's.
 *
 * @throws the file-system error (a read-only runtime root).
 */
export async function writeSealed(file: string, value: object): Promise<void> {
  const temp = `${file}.${process.pid}.${(sealSequence += 1)}.tmp`;
  try {
    await fsp.writeFile(temp, sealCache(value)).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
      await fsp.mkdir(path.dirname(file), { recursive: true });
      await fsp.writeFile(temp, sealCache(value));
    });
    await fsp.rename(temp, file);
  } catch (error) {
    await fsp.rm(temp, { force: true });
    throw error;
  }
}

/**
 * Reads a file written by {@link writeSealedSync}.
 *
 * @returns undefined when there is none; else what {@link unsealCache} says of its text.
 * @throws the file-system error other than ENOENT (a directory in its place, no permission).
 */
export function readSealedSync(file: string): { value: Record<string, unknown> } | { damaged: string } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return unsealCache(text);
}
