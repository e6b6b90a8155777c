import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { GoalRecord, LeaseRecord } from '../contracts/index.js';
import { RUNNER_NAME_PATTERN } from '../contracts/index.js';
import { writeJsonAtomic } from '../store/index.js';
import { ulid } from 'ulid';
import type { ClaimContext, PlantDocument } from './client.js';

/**
 * A runner's state directory (docs/runners/level2.md, "Catch-up and
 * resumption"): nothing it cannot rebuild.
 *
 * ```
 * <state>/cursor                    the last event id seen
 * <state>/instance                  this runner's instance id (a ULID, made once), sent as Pak2-Runner-Instance
 * <state>/runner.pid                the pid of the runner process using the directory (its lock)
 * <state>/garden/                   the scratch runtime root (runs/, goals/, events/, plants/, seeds/, MOTIVATION.md)
 * <state>/runs/<run-id>/claim.json  the lease, goal and context as claimed, and the work tree's baseline
 * <state>/runs/<run-id>/outbox/     PAK2_OUTBOX: the agent's comments to post (sent/ once posted)
 * <state>/runs/<run-id>/inbox/      PAK2_INBOX: the answers to them
 * ```
 */

/** Default state directory: `$XDG_STATE_HOME/pak2/runner-<name>`, else `~/.local/state/pak2/runner-<name>`. */
export function defaultStateDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME ? env.XDG_STATE_HOME : path.join(env.HOME || os.homedir(), '.local', 'state');
  return path.join(base, 'pak2', `runner-${name}`);
}

/** The default runner name: the host name, cut to the pattern (letters, digits, `.`, `_`, `-`; at most 64). */
export function defaultRunnerName(host = os.hostname()): string {
  const cleaned = host.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64);
  return RUNNER_NAME_PATTERN.test(cleaned) ? cleaned : 'runner';
}

/** The scratch runtime root inside a state directory. */
export function scratchRoot(stateDir: string): string {
  return path.join(stateDir, 'garden');
}

/** `<state>/runs/<run-id>/`: the runner's own files of one run. */
export function localRunDir(stateDir: string, runId: string): string {
  return path.join(stateDir, 'runs', runId);
}

/** `PAK2_OUTBOX` of a run. */
export function outboxDir(stateDir: string, runId: string): string {
  return path.join(localRunDir(stateDir, runId), 'outbox');
}

/** `PAK2_INBOX` of a run. */
export function inboxDir(stateDir: string, runId: string): string {
  return path.join(localRunDir(stateDir, runId), 'inbox');
}

/** What the runner keeps of a claim, to resume it after a restart. */
export interface ClaimState {
  lease: LeaseRecord;
  goal: GoalRecord;
  context: ClaimContext;
  /** The plant documents as claimed (path → content), to tell which changed. */
  documents: Record<string, string>;
  /** The workdir's own `plants/<plant>/` documents at claim (path → content). */
  workdirDocuments: Record<string, string>;
  /** A git tree of the work tree at claim (untracked files included), or null outside a git work tree. */
  baselineTree: string | null;
  claimed_at: string;
}

/** Writes `claim.json` of a run (atomic). */
export async function writeClaimState(stateDir: string, state: ClaimState): Promise<void> {
  await writeJsonAtomic(path.join(localRunDir(stateDir, state.lease.run), 'claim.json'), state);
}

/** Reads `claim.json` of a run, or undefined when the runner has no such state. */
export function readClaimState(stateDir: string, runId: string): ClaimState | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(localRunDir(stateDir, runId), 'claim.json'), 'utf8')) as ClaimState;
  } catch {
    return undefined;
  }
}

/** The persisted event cursor, or undefined. */
export function readCursor(stateDir: string): string | undefined {
  try {
    const text = fs.readFileSync(path.join(stateDir, 'cursor'), 'utf8').trim();
    return text || undefined;
  } catch {
    return undefined;
  }
}

/** Persists the event cursor (atomic: temp file, rename). */
export async function writeCursor(stateDir: string, cursor: string): Promise<void> {
  const file = path.join(stateDir, 'cursor');
  const temp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(temp, `${cursor}\n`);
  await fsp.rename(temp, file);
}

/** `<state>/instance`: the runner instance id kept in a state directory. */
export function instanceFile(stateDir: string): string {
  return path.join(stateDir, 'instance');
}

/**
 * The runner instance id of a state directory (docs/runners/level2.md,
 * "Catch-up and resumption"): read from `<state>/instance`, or made (a
 * ULID) and written there the first time. The caller holds the state
 * directory's lock ({@link lockStateDir}), so one process makes it.
 *
 * @throws Error when the file cannot be read or written.
 */
export function runnerInstance(stateDir: string): string {
  const file = instanceFile(stateDir);
  try {
    const text = fs.readFileSync(file, 'utf8').trim();
    if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(text)) return text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const id = ulid();
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${id}\n`);
  fs.renameSync(temp, file);
  return id;
}

/** The documents whose content differs between `before` and `after` (new ones included; removed ones are not sent). */
export function changedDocuments(before: Record<string, string>, after: Record<string, string>): PlantDocument[] {
  return Object.keys(after)
    .sort()
    .filter((p) => before[p] !== after[p])
    .map((p) => ({ path: p, content: after[p]! }));
}

/** `<state>/runner.pid`: the pid of the runner process using the state directory. */
export function stateLockFile(stateDir: string): string {
  return path.join(stateDir, 'runner.pid');
}

/** True when `pid` is a live process whose command line names `runner` (a pak2 runner), on Linux; elsewhere, when it lives. */
function isRunnerProcess(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').includes('runner');
  } catch {
    return true;
  }
}

/**
 * Takes the state directory for this process: one runner process per
 * state directory (two would resume and finish each other's runs). A file
 * left by a runner that died is taken over.
 *
 * @returns a release function (removes the file if it is still ours).
 * @throws Error naming the holder's pid when a live runner holds it.
 */
export function lockStateDir(stateDir: string): () => void {
  const file = stateLockFile(stateDir);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file, { force: true });
        } catch {
          // gone already
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(fs.readFileSync(file, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunnerProcess(holder)) throw new Error(`another pak2 runner (pid ${holder}) uses ${stateDir}`);
      fs.rmSync(file, { force: true });
    }
  }
  throw new Error(`cannot take ${file}`);
}
