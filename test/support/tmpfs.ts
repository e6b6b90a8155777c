/**
 * A real small file system for the full-disk tests (issue 25, item 8): a
 * tmpfs of a given size mounted on a fresh temp directory. Mounting needs
 * root (or CAP_SYS_ADMIN); where the machine does not allow it,
 * {@link mountTmpfs} returns undefined and the test skips, and the
 * injected-fault test beside it (PAK2_FAULT_WRITE) covers the same path.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const mounted: string[] = [];

/** Mounts a tmpfs of `sizeKb` on a new temp directory; undefined when mount is not permitted here. */
export function mountTmpfs(sizeKb: number): string | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    fs.rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  mounted.push(dir);
  return dir;
}

/** True when this machine lets a test mount a tmpfs (probed once). */
export const canMountTmpfs: boolean = (() => {
  const dir = mountTmpfs(64);
  if (!dir) return false;
  unmountAll();
  return true;
})();

/** Fills the file system holding `dir` until fewer than `leaveKb` KB are free (a file named `filler` in `dir`). */
export function fillDisk(dir: string, leaveKb: number): void {
  const { bavail, bsize } = fs.statfsSync(dir);
  const bytes = Math.max(0, bavail * bsize - leaveKb * 1024);
  const fd = fs.openSync(path.join(dir, 'filler'), 'w');
  try {
    const chunk = Buffer.alloc(64 * 1024);
    for (let left = bytes; left > 0; ) {
      const n = fs.writeSync(fd, chunk, 0, Math.min(chunk.length, left));
      if (n <= 0) break;
      left -= n;
    }
  } catch {
    // full already
  } finally {
    fs.closeSync(fd);
  }
}

/** Unmounts and removes every tmpfs mounted here; call from `afterEach`. */
export function unmountAll(): void {
  for (const dir of mounted.splice(0)) {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    } catch {
      // already gone
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
