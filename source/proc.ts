import fs from 'node:fs';

/** The pids (as `/proc` entry names) of every process but this one; empty where there is no `/proc`. */
export function otherProcesses(): string[] {
  try {
    return fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid);
  } catch {
    return [];
  }
}

/**
 * Pids of live processes (other than this one) holding any of `files` open
 * (Linux `/proc/<pid>/fd`). A descendant that cleared its environment and
 * left the process group (`setsid env -i …`) still holds the run's stdout
 * file; this finds it.
 */
export function fileHolders(files: string[]): number[] {
  const targets = new Set(files.map((file) => safeRealpath(file)).filter((file): file is string => Boolean(file)));
  const pids: number[] = [];
  if (targets.size === 0) return pids;
  for (const name of otherProcesses()) {
    for (const target of openFiles(name) ?? []) {
      if (!targets.has(target)) continue;
      pids.push(Number(name));
      break;
    }
  }
  return pids;
}

/**
 * What process `name` (a `/proc` entry name) has open: each fd's target
 * (`/proc/<pid>/fd/<n>`, each read as a link when the caller gets to it); undefined when its fd directory
 * cannot be read (it ended, or is not ours to read).
 */
export function openFiles(name: string): Iterable<string> | undefined {
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${name}/fd`);
  } catch {
    return undefined;
  }
  // Read as asked: a caller that found what it looks for stops reading links.
  return (function* () {
    for (const fd of fds) {
      try {
        yield fs.readlinkSync(`/proc/${name}/fd/${fd}`);
      } catch {
        // closed meanwhile
      }
    }
  })();
}

function safeRealpath(file: string): string | undefined {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
}

/** The command line of a process, for reports (`?` when unreadable). */
export function commandOf(pid: number): string {
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean).join(' ');
    return cmd || '?';
  } catch {
    return '?';
  }
}

/** True while a process with `pid` exists and is not a zombie (signal 0, then `/proc/<pid>/stat`). */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: signal 0 is all there is
  }
}
