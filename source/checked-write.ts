import type fsp from 'node:fs/promises';

/**
 * The fault seam of pak2's own writes (docs/run/level2.md, "A full disk"):
 * `PAK2_FAULT_WRITE=<code>@<part>` makes every {@link writeAll} into a file
 * whose path contains `<part>` fail as a full disk does: `ENOSPC`, `EIO`,
 * `EROFS` (any errno word) write half the bytes, then fail with that code;
 * `short` writes half, then makes no progress (a write that returns 0),
 * which the check must catch rather than loop on. Read at each write, so a
 * test may set it for one step. Inert when unset.
 */
export const WRITE_FAULT_ENV = 'PAK2_FAULT_WRITE';

/** An error that carries an errno word, as node's own do. */
function errnoError(code: string, file: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${code}: ${message}, write '${file}'`);
  error.code = code;
  error.syscall = 'write';
  error.path = file;
  return error;
}

/** The injected fault for `file`, if {@link WRITE_FAULT_ENV} names one. */
function faultFor(file: string): string | undefined {
  const spec = process.env[WRITE_FAULT_ENV];
  if (!spec) return undefined;
  const at = spec.indexOf('@');
  if (at <= 0) return undefined;
  return file.includes(spec.slice(at + 1)) ? spec.slice(0, at) : undefined;
}

/**
 * Writes all of `data` through `handle` at its current position (or
 * appended, for a file opened with `a`), looping on short writes, and
 * fails rather than loop when a write makes no progress. `file` names the
 * file in the error.
 *
 * @throws the write's own errno error (ENOSPC, EIO, EROFS, EDQUOT, …), or
 * an `EIO` error "short write (N of M bytes)" when a write wrote nothing.
 */
export async function writeAll(handle: fsp.FileHandle, data: Uint8Array, file: string): Promise<void> {
  const fault = faultFor(file);
  const end = fault ? Math.floor(data.length / 2) : data.length;
  let written = 0;
  while (written < end) {
    const { bytesWritten } = await handle.write(data, written, end - written);
    if (bytesWritten <= 0) break;
    written += bytesWritten;
  }
  if (fault && fault !== 'short') throw errnoError(fault, file, 'injected fault');
  if (written < data.length) throw errnoError('EIO', file, `short write (${written} of ${data.length} bytes)`);
}

/**
 * Checks that `handle`'s file holds exactly `length` bytes: the last guard
 * before a temp file is renamed over a record (a file system that lost a
 * write without saying so must not publish a torn record).
 *
 * @throws an `EIO` error naming the file and both sizes.
 */
export async function checkSize(handle: fsp.FileHandle, length: number, file: string): Promise<void> {
  const { size } = await handle.stat();
  if (size !== length) throw errnoError('EIO', file, `wrote ${length} bytes, the file holds ${size}`);
}

/** The errno word of an error or of the error it wraps (`cause`), if any. */
export function errnoOf(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth += 1) {
    if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return e.code;
  }
  return undefined;
}

/** Errno words that say the file system cannot take a write now (full, read-only, failing): an I/O fault, not a bug. */
export const IO_FAULT_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EFBIG']);

/** True when `error` (or its cause) is an I/O fault of the file system ({@link IO_FAULT_CODES}). */
export function isIoFault(error: unknown): boolean {
  const code = errnoOf(error);
  return code !== undefined && IO_FAULT_CODES.has(code);
}
