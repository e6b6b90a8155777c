import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { checkSize, writeAll } from './checked-write.js';

/** Options of {@link writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** fsync the temp file before the rename (default true). */
  fsync?: boolean;
  /** Make the file's directory when it is missing (default false: the write fails with ENOENT). */
  mkdir?: boolean;
  /** The file's mode, set explicitly (not left to the umask), whatever the file it replaces had; default: the replaced file's, else 0666 less the umask. */
  mode?: number;
}

/** The suffix of every temp file an atomic write makes; the runtime repo never commits `*.tmp` and the goals watch ignores it. */
export const ATOMIC_TEMP_SUFFIX = '.tmp';

let sequence = 0;
const queues = new Map<string, Promise<unknown>>();

/**
 * Writes `data` to `file` atomically, as write-file-atomic did: the bytes go
 * to a temp file beside the file's real path (a symbolic link is written
 * through, not replaced), fsynced, given the mode (and, as root, the owner)
 * of the file it replaces, then renamed over it, so a reader sees the old
 * bytes or the new, never a part. The temp file is named
 * `<file>.<pid>.<n>.tmp`: a name the runtime repo never commits (`*.tmp`)
 * and the goals watch ignores, so a `git add -A` of the runtime tree running
 * meanwhile never meets a name that vanishes under it (write-file-atomic's
 * `<file>.<hash>` did, and failed the capture). Writes of one file from this
 * process complete in the order they were asked for. Every byte is checked
 * written before the rename (a short write that makes no progress is an
 * error, never a loop) and the temp file's size is checked against the
 * data: a full disk (ENOSPC), a read-only one (EROFS) or a failing one
 * (EIO) leaves the old file as it was. A failed write removes its temp file
 * and throws the errno error (source/checked-write.ts).
 */
export function writeFileAtomic(file: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const key = path.resolve(file);
  const previous = queues.get(key) ?? Promise.resolve();
  const task = previous.catch(() => undefined).then(() => writeNow(file, data, options));
  queues.set(key, task);
  void task.then(
    () => queues.get(key) === task && queues.delete(key),
    () => queues.get(key) === task && queues.delete(key),
  );
  return task;
}

async function writeNow(file: string, data: string | Uint8Array, options: AtomicWriteOptions): Promise<void> {
  const target = await fsp.realpath(file).catch(() => file);
  const temp = `${target}.${process.pid}.${(sequence += 1)}${ATOMIC_TEMP_SUFFIX}`;
  const existing = await fsp.stat(target).catch(() => undefined);
  let handle: fsp.FileHandle | undefined;
  try {
    const open = () => fsp.open(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, options.mode ?? (existing ? existing.mode & 0o7777 : 0o666));
    try {
      handle = await open();
    } catch (error) {
      if (!options.mkdir || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await fsp.mkdir(path.dirname(target), { recursive: true });
      handle = await open();
    }
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    await writeAll(handle, bytes, temp);
    await checkSize(handle, bytes.length, temp);
    if (options.fsync !== false) await handle.sync();
    if (options.mode !== undefined) await handle.chmod(options.mode).catch(ignoreChmod);
    if (existing) {
      // open() applied the umask: give the file the mode (and, as root, the owner) of the one it replaces.
      const made = await handle.stat();
      if (options.mode === undefined && (made.mode & 0o7777) !== (existing.mode & 0o7777)) await handle.chmod(existing.mode & 0o7777).catch(ignoreChmod);
      if (process.getuid?.() === 0 && (made.uid !== existing.uid || made.gid !== existing.gid)) await handle.chown(existing.uid, existing.gid).catch(ignoreChmod);
    }
    await handle.close();
    handle = undefined;
    await fsp.rename(temp, target);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await fsp.unlink(temp).catch(() => undefined);
    throw error;
  }
}

/** A file system without modes or owners (ENOSYS, or EPERM / EINVAL when not root) keeps what it has, as write-file-atomic did. */
function ignoreChmod(error: NodeJS.ErrnoException): void {
  if (error.code === 'ENOSYS') return;
  if (process.getuid?.() !== 0 && (error.code === 'EINVAL' || error.code === 'EPERM')) return;
  throw error;
}
