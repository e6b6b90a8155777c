import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pLimit from 'p-limit';
import { isTerminalRunStatus, RUN_ID_PATTERN, validateRun, type GoalRecord, type RunRecord } from '../contracts/index.js';
import { markedProcesses } from '../driver/process-tree.js';
import { runDir } from '../garden/index.js';
import { readGoal, readJsonFile, readRunChecked, runIdsForGoal, runMetaFile, runSealFile, StoreError, writeJsonAtomic, type CheckedRun } from '../store/index.js';
import type { GoalScan } from './goals.js';
import { processAlive } from '../proc.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** `runs/<id>/process.json` (driver/dispatch.ts RUN_PROCESS_FILE), read without loading the driver. */
const PROCESS_FILE = 'process.json';

interface ProcessRecord {
  pid?: number;
  mark?: string;
  host?: string;
}

function strip(message: string, file: string): string {
  return message.startsWith(`${file}: `) ? message.slice(file.length + 2) : message;
}

/** Run ids with a run directory or a seal. */
async function runIds(runsDir: string): Promise<string[]> {
  const ids = new Set<string>();
  const list = async (dir: string, pick: (entry: fs.Dirent) => string | undefined) => {
    try {
      for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
        const id = pick(entry);
        if (id && RUN_ID_PATTERN.test(id)) ids.add(id);
      }
    } catch {
      // none yet
    }
  };
  await list(runsDir, (e) => (e.isDirectory() ? e.name : undefined));
  await list(path.join(runsDir, '.seals'), (e) => (e.isFile() && e.name.endsWith('.json') ? e.name.slice(0, -5) : undefined));
  return [...ids].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/** True when reclaim (coordinator start) will take this run: its goal is open as dispatched/running and this is its latest attempt. */
async function reclaimable(ctx: DoctorContext, runId: string, goal: GoalRecord | undefined): Promise<boolean> {
  if (!goal || (goal.status !== 'running' && goal.status !== 'dispatched')) return false;
  return (await runIdsForGoal(ctx.garden.paths, goal.id)).at(-1) === runId;
}

function goalOf(runId: string): string {
  return RUN_ID_PATTERN.exec(runId)![1]!;
}

/**
 * Words for a running run's agent process (`<dir>/process.json`), and
 * whether any of it is alive on this host: undefined when that cannot be
 * told (no readable process.json; `elsewhere`: it ran on another host).
 */
export function agentProcess(dir: string): { alive: boolean | undefined; elsewhere?: boolean; words: string } {
  let record: ProcessRecord;
  try {
    record = JSON.parse(fs.readFileSync(path.join(dir, PROCESS_FILE), 'utf8')) as ProcessRecord;
  } catch {
    return { alive: undefined, words: `there is no readable ${PROCESS_FILE}` };
  }
  if (record.host !== os.hostname()) return { alive: undefined, elsewhere: true, words: `its agent process ran on host ${record.host ?? '?'}, which doctor cannot see` };
  const pidAlive = typeof record.pid === 'number' && processAlive(record.pid);
  const marked = typeof record.mark === 'string' && record.mark ? markedProcesses(record.mark) : [];
  if (pidAlive || marked.length > 0) return { alive: true, words: `its agent processes are still alive (pid ${[...new Set([...(pidAlive ? [record.pid!] : []), ...marked])].join(', ')}; see the processes check)` };
  return { alive: false, words: `its agent process (pid ${record.pid ?? '?'}) is gone` };
}

/**
 * Every run: `runs/<id>/meta.json` against its seal `runs/.seals/<id>.json`
 * (readRunChecked), and every run still `running`.
 *
 * - meta.json torn, gone or different from the seal: for a closed run, fix:
 *   move the damaged meta.json aside and rewrite it from the seal. A running
 *   run is left to its close, which records the damage (`record_tampering`)
 *   and rewrites meta.json itself.
 * - a seal that does not read or validate: readers ignore it and believe
 *   meta.json; fix: move it aside.
 * - no seal and a meta.json that does not read or validate: nothing to
 *   rebuild it from. A run reclaim will take (open goal, latest attempt) is
 *   rebuilt by `pak2 cycle` at start; otherwise no automatic fix.
 * - a run `running` whose goal is closed (reclaim reads open goals only, so
 *   only `pak2 stop RUN` closes it), or, while no coordinator holds the
 *   garden, any `running` local run (a remote run is its lease's: see
 *   leases.ts): no automatic fix, the line says what will take it.
 * - while no coordinator holds the garden, a run that ended while its goal
 *   is still `dispatched` or `running` (a crash between the two closes;
 *   the latest attempt only): fix: settle the goal from its run, as a
 *   coordinator pass would (settleGoals).
 */
export async function checkRuns(ctx: DoctorContext, goals: GoalScan): Promise<Problem[]> {
  const { paths } = ctx.garden;
  const problems: Problem[] = [];
  const limit = pLimit(32);
  const ids = await runIds(paths.runsDir);
  const results = await Promise.all(ids.map((id) => limit(() => checkRun(ctx, goals, id))));
  for (const list of results) problems.push(...list);
  return problems;
}

async function checkRun(ctx: DoctorContext, goals: GoalScan, runId: string): Promise<Problem[]> {
  const { paths } = ctx.garden;
  const problems: Problem[] = [];
  const meta = runMetaFile(paths, runId);
  const sealFile = runSealFile(paths, runId);
  const goal = goals.goals.get(goalOf(runId));

  const sealRead = await readJsonFile(sealFile);
  if (!sealRead.ok && !sealRead.missing) {
    problems.push(sealProblem(sealFile, strip(sealRead.message, sealFile)));
  } else if (sealRead.ok) {
    const issues = validateRun(sealRead.value);
    const why = issues.length > 0 ? `${issues[0]!.field || '(document)'}: ${issues[0]!.code} (${issues[0]!.message})` : (sealRead.value as RunRecord).id !== runId ? `id ${JSON.stringify((sealRead.value as RunRecord).id)} does not match its file name` : undefined;
    if (why) problems.push(sealProblem(sealFile, why, issues[0]?.field));
  }

  let checked: CheckedRun;
  try {
    checked = await readRunChecked(paths, runId);
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    if (error.code === 'RUN_NOT_FOUND') {
      problems.push({ check: 'runs', file: meta, message: 'the run directory has no record: no meta.json and no seal; nothing to rebuild it from' });
      return problems;
    }
    const take = await reclaimable(ctx, runId, goal);
    const text = strip(error.message, meta);
    const field = /^([\w.[\]-]+): [A-Z_]+ \(/.exec(text)?.[1];
    problems.push({
      check: 'runs',
      file: meta,
      ...(field && field !== '(document)' ? { field } : {}),
      message: `${text}; there is no seal to rewrite it from${take ? '; `pak2 cycle` rebuilds it from the goal and process record at start and closes it killed' : ''}`,
    });
    return problems;
  }

  const { run, damage } = checked;
  if (damage) {
    const field = damage.fields.join(', ');
    const detail = damage.fields[0] === '(unreadable)' ? `torn or missing (${strip(damage.detail, meta)})` : `differs from the record pak2 sealed in ${field}`;
    if (run.status === 'running') {
      problems.push({ check: 'runs', file: meta, field, message: `${detail}; the run is still running: its close rewrites meta.json from the seal and records the damage (record_tampering)` });
    } else {
      problems.push({
        check: 'runs',
        file: meta,
        field,
        message: `${detail}; readers use the seal ${sealFile}`,
        fix: `rewrite meta.json from the seal${fs.existsSync(meta) ? ', copying the damaged file aside' : ''}`,
        repair: async (c) => {
          const again = await readRunChecked(paths, runId);
          if (!again.damage) return 'meta.json already matches the seal';
          if (!isTerminalRunStatus(again.run.status)) throw new NotFixed('the run is running again');
          // Copied aside, then replaced by one checked atomic write: a write that fails (a full disk) leaves meta.json as it was.
          const moved = fs.existsSync(meta) ? await c.aside.copy(meta) : undefined;
          await writeJsonAtomic(meta, again.run);
          return `rewrote meta.json from the seal${moved ? `; a copy of the damaged file is at ${moved}` : ''}`;
        },
      });
    }
  }

  if (isTerminalRunStatus(run.status) && !run.runner && (goal?.status === 'running' || goal?.status === 'dispatched') && !ctx.presence.held && (await runIdsForGoal(paths, goal.id)).at(-1) === runId) {
    // A crash between the run's close and its goal's: no pass settles it while no coordinator runs, and the goal holds a slot for ever.
    // (A remote run's goal is its lease's: the leases check names it.)
    problems.push({
      check: 'runs',
      file: meta,
      field: 'status',
      message: `ended ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}, but its goal ${goal.id} is still ${goal.status} and no coordinator holds the garden; \`pak2 cycle\` or \`pak2 serve\` settles it at start, \`pak2 cancel ${goal.id}\` settles it now`,
      fix: `settle goal ${goal.id} from its run, as a coordinator pass would`,
      repair: async (c) => {
        if (c.presence.held) throw new NotFixed(`a coordinator holds the garden (${c.presence.heldBy}); its next pass settles it`);
        const { repairDispatched, settleGoals } = await import('../coordinator/index.js');
        const fresh = await readGoal(paths, goal.id);
        const now = () => new Date();
        await repairDispatched(paths, [fresh], async () => run, now);
        const out = await settleGoals(paths, [fresh], async () => run, now, { garden: c.garden, env: c.env });
        return out.closed.length ? `settled goal ${goal.id}: closed ${out.closed[0]!.reason}` : out.requeued.length ? `settled goal ${goal.id}: back in the queue` : `goal ${goal.id} is ${fresh.status} now`;
      },
    });
  }

  if (run.status === 'running') {
    if (goal?.status === 'closed') {
      problems.push({
        check: 'runs',
        file: meta,
        field: 'status',
        message: `running, but its goal ${goal.id} is closed (${goal.closed_reason ?? '?'}); reclaim at coordinator start reads open goals only, so it stays running until \`pak2 stop ${runId}\` sweeps and closes it`,
      });
    } else if (!ctx.presence.held && !run.runner) {
      // A remote run's liveness is its lease, not a local process, and reclaim never takes it: the leases check speaks for it.
      const agent = agentProcess(runDir(paths, runId));
      const take = await reclaimable(ctx, runId, goal);
      problems.push({
        check: 'runs',
        file: meta,
        field: 'status',
        message: `running, but no coordinator holds the garden and ${agent.words}; ${
          take ? '`pak2 cycle` reclaims it at start (kills what is left, closes it killed, coordinator_stopped)' : `reclaim will not take it (its goal is ${goal ? goal.status : 'unreadable or gone'}${goal ? ', or this is not its latest attempt' : ''}); \`pak2 stop ${runId}\` sweeps and closes it`
        }`,
      });
    }
  }
  return problems;
}

function sealProblem(file: string, why: string, field?: string): Problem {
  return {
    check: 'runs',
    file,
    ...(field ? { field } : {}),
    message: `${why}; readers ignore this seal and believe meta.json`,
    fix: 'move the seal aside',
    repair: async (c) => `moved the seal aside to ${await c.aside.move(file)}`,
  };
}
