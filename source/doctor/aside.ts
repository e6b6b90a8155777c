import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { writeFileAtomic } from '../atomic-write.js';

/** `<runtime-root>/doctor/`: where `pak2 doctor --fix` keeps what it moved aside, one directory per run. */
export function doctorDir(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'doctor');
}

/** A file-name-safe UTC timestamp: `2026-11-29T09-12-44-120Z`. */
export function doctorStamp(now: Date): string {
  return now.toISOString().replace(/[:.]/g, '-');
}

/**
 * Where one `pak2 doctor --fix` keeps the files it takes out of the way:
 * `<runtime-root>/doctor/<timestamp>/<relative path>`, the path relative to
 * the runtime root (or, for a file outside it such as `plants/x/meta.json`,
 * to the garden root). Nothing is ever deleted: a file is moved (or copied,
 * when it is about to be rewritten in place) and the caller says where.
 * The directory is created on first use only.
 */
export class Aside {
  /** `<runtime-root>/doctor/<timestamp>`. */
  readonly dir: string;
  private used = false;

  constructor(
    private readonly paths: GardenPaths,
    now: Date = new Date(),
  ) {
    let dir = path.join(doctorDir(paths), doctorStamp(now));
    for (let n = 2; fs.existsSync(dir); n += 1) dir = path.join(doctorDir(paths), `${doctorStamp(now)}-${n}`);
    this.dir = dir;
  }

  /** True once something was put aside. */
  get touched(): boolean {
    return this.used;
  }

  /** The path a file keeps under {@link dir}. */
  relative(file: string): string {
    for (const base of [this.paths.runtimeRoot, this.paths.gardenRoot]) {
      const rel = path.relative(base, file);
      if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel;
    }
    return path.basename(file);
  }

  private async destination(file: string): Promise<string> {
    let target = path.join(this.dir, this.relative(file));
    for (let n = 2; fs.existsSync(target); n += 1) target = `${path.join(this.dir, this.relative(file))}.${n}`;
    await fsp.mkdir(path.dirname(target), { recursive: true });
    this.used = true;
    return target;
  }

  /**
   * Moves `file` (or directory) aside.
   *
   * @returns where it now is.
   * @throws the file-system error when it cannot be moved (it is then where it was).
   */
  async move(file: string): Promise<string> {
    const target = await this.destination(file);
    try {
      await fsp.rename(file, target);
    } catch (error) {
      if (!isErrno(error, 'EXDEV')) throw error;
      // Another file system: copy, then take the original away.
      await fsp.cp(file, target, { recursive: true, preserveTimestamps: true });
      await fsp.rm(file, { recursive: true, force: true });
    }
    return target;
  }

  /**
   * Copies `file` aside, leaving it in place (for a file about to be
   * rewritten atomically).
   *
   * @returns where the copy is.
   */
  async copy(file: string): Promise<string> {
    const target = await this.destination(file);
    await fsp.copyFile(file, target);
    return target;
  }

  /** Writes `report.json` (what this doctor found and did) beside what it moved aside, if it moved anything. */
  async writeReport(report: unknown): Promise<void> {
    if (!this.used) return;
    // Checked and atomic, as every record: a full disk leaves no torn report.
    await writeFileAtomic(path.join(this.dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  }
}
