import fs from 'node:fs';
import { commandOf, fileHolders, otherProcesses } from '../proc.js';
import { span } from '../timing.js';

export { commandOf, fileHolders } from '../proc.js';

/**
 * The environment variable every agent process of a run inherits, with a
 * value unique to one launch. Agent CLIs start tool commands in new sessions
 * (claude's Bash tool uses setsid; codex's sandbox too), out of reach of a
 * process-group kill, and orphans lose their parent link; the inherited mark
 * finds them all. Its name avoids KEY/SECRET/TOKEN, which codex strips.
 */
export const RUN_MARK_ENV = 'PAK2_RUN_MARK';

/**
 * Pids of live processes whose environment carries `PAK2_RUN_MARK=<mark>`
 * (Linux `/proc`; elsewhere an empty list, and the group kill is all there is).
 */
export function markedProcesses(mark: string): number[] {
  const needle = `${RUN_MARK_ENV}=${mark}\0`;
  const pids: number[] = [];
  for (const name of otherProcesses()) {
    try {
      if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').includes(needle)) pids.push(Number(name));
    } catch {
      // exited meanwhile, or not readable
    }
  }
  return pids;
}

/**
 * True when a live process other than this one is in process group `pgid`.
 * A group with no member left frees its id for the next process the kernel
 * starts: signalling it after that could reach someone else's group.
 */
export function groupHasMembers(pgid: number): boolean {
  for (const name of otherProcesses()) {
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      // Fields after the command (which may hold spaces and parentheses): state, ppid, pgrp.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
    } catch {
      // exited meanwhile
    }
  }
  return false;
}

/** Sends `signal` to a process group (negative pid); quiet when it is gone. */
export function signalGroup(pgid: number | undefined, signal: NodeJS.Signals): void {
  if (!pgid) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is already gone
  }
}


/** A process the sweep could not end, named for the one-line report. */
export interface Survivor {
  pid: number;
  command: string;
}

/**
 * Ends what a run left behind: SIGKILL to its process group, to every
 * process carrying its mark, and to every process still holding one of its
 * output files. Then waits up to `settleMs` for them to go and returns the
 * ones still there (a process in another pid namespace, one pak2 may not
 * signal). Never waits longer than `settleMs`.
 */
export async function sweepRun(pgid: number | undefined, mark: string, files: string[], settleMs = 2000): Promise<Survivor[]> {
  const targets = () => {
    const endMark = span('sweep: /proc environ scan');
    const marked = markedProcesses(mark);
    endMark();
    const endFd = span('sweep: /proc fd scan');
    const holders = fileHolders(files);
    endFd();
    return [...new Set([...marked, ...holders])];
  };
  // Its leader is gone: the group is signalled only while a member still holds its id.
  const endGroup = span('sweep: /proc stat scan (group)');
  if (pgid && (!fs.existsSync('/proc/self/stat') || groupHasMembers(pgid))) signalGroup(pgid, 'SIGKILL');
  endGroup();
  for (const pid of targets()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, or not ours to signal: reported below if it stays
    }
  }
  const until = Date.now() + settleMs;
  let left = targets();
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    left = targets();
  }
  return left.map((pid) => ({ pid, command: commandOf(pid) }));
}
