import fs from 'node:fs';
import path from 'node:path';

/** How often a watched directory's identity is re-checked (ms): the fallback when no event says it was replaced. */
export const REARM_CHECK_MS = 1000;

/**
 * Wakes a loop when anything changes in some directories, at O(1) cost
 * whatever they hold: one inotify watch per directory (`fs.watch`), no scan
 * and no stat of the entries (chokidar stats every entry when it starts, so
 * a garden with 50,000 goal files paid for all of them). The events carry
 * no payload: the loop reads the world itself (level-based reconcile).
 *
 * A directory that is replaced (`mv goals goals.old && mkdir goals`) is
 * noticed through its parent's watch, and at the latest by a periodic
 * identity check (inode), and watched again; a directory that does not exist
 * yet is watched once it appears.
 */
export class DirectoryWake {
  private readonly watchers = new Map<string, { watcher: fs.FSWatcher | undefined; ino: number | undefined }>();
  private readonly parents = new Map<string, fs.FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly dirs: string[],
    private readonly onWake: () => void,
    /** Entry names whose changes do not wake (lock directories, temp files). */
    private readonly ignore: (name: string) => boolean = () => false,
  ) {}

  /** Starts watching; returns at once. */
  start(): void {
    for (const dir of this.dirs) {
      this.arm(dir);
      this.watchParent(path.dirname(dir));
    }
    this.timer = setInterval(() => this.check(), REARM_CHECK_MS);
    this.timer.unref();
  }

  private inoOf(dir: string): number | undefined {
    try {
      return fs.statSync(dir).ino;
    } catch {
      return undefined;
    }
  }

  private arm(dir: string): void {
    const previous = this.watchers.get(dir);
    previous?.watcher?.close();
    let watcher: fs.FSWatcher | undefined;
    try {
      watcher = fs.watch(dir, { persistent: false }, (_event, name) => {
        if (!name || !this.ignore(name.toString())) this.onWake();
      });
      watcher.on('error', () => {
        // The directory went away under the watch: the next check re-arms it.
        watcher?.close();
        this.watchers.set(dir, { watcher: undefined, ino: undefined });
      });
    } catch {
      watcher = undefined;
    }
    this.watchers.set(dir, { watcher, ino: watcher ? this.inoOf(dir) : undefined });
  }

  private watchParent(parent: string): void {
    if (this.parents.has(parent)) return;
    try {
      const watcher = fs.watch(parent, { persistent: false }, (_event, name) => {
        const child = name ? path.join(parent, name.toString()) : undefined;
        if (child && this.watchers.has(child)) this.check();
      });
      watcher.on('error', () => watcher.close());
      this.parents.set(parent, watcher);
    } catch {
      // no parent yet: the periodic check covers it
    }
  }

  /** Re-arms every directory whose identity changed (replaced, created, removed), and wakes the loop if any did. */
  check(): void {
    if (this.closed) return;
    let changed = false;
    for (const [dir, state] of this.watchers) {
      const ino = this.inoOf(dir);
      if (ino !== state.ino || (ino !== undefined && !state.watcher)) {
        this.arm(dir);
        changed = true;
      }
    }
    if (changed) this.onWake();
  }

  /** Stops every watch. Idempotent. */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const { watcher } of this.watchers.values()) watcher?.close();
    for (const watcher of this.parents.values()) watcher.close();
    this.watchers.clear();
    this.parents.clear();
  }
}
