import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { GOAL_TRANSITIONS, isTerminalRunStatus, type EventRecord, type GoalRecord, type GoalStatus, type RunRecord } from '../contracts/index.js';
import { runDir, type Garden } from '../garden/index.js';
import { appendEvent, goalOfEntry, latestRun, OpenGoalScanner, readGoal, readLanding, readRunChecked, recentClosed, republishRun, runIdsForGoal, runSealFile, StoreError, transitionGoalLocked, withGoalLock, type GoalProblem } from '../store/index.js';

/** How much of the event log's end recovery reads (bytes): a crash's missing events are among the last written. */
export const RECOVERY_TAIL_BYTES = 4 * 1024 * 1024;
/** How many recently closed goals recovery looks at besides the open ones. */
export const RECOVERY_RECENT_CLOSED = 50;

/** The event a landing's end state is announced by. */
const LANDING_END_EVENTS: Partial<Record<string, 'Landed' | 'LandingConflict' | 'LandingRejected' | 'LandingFailed'>> = { landed: 'Landed', conflict: 'LandingConflict', rejected: 'LandingRejected', failed: 'LandingFailed' };

/** What {@link recoverInterruptedWrites} repaired, in words, one entry each. */
export type Recovered = string[];

async function logTail(file: string): Promise<EventRecord[]> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch {
    return [];
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, RECOVERY_TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split('\n');
    if (length < size) lines.shift(); // cut mid-line
    const events: EventRecord[] = [];
    for (const line of lines) {
      if (!line.trim()) continue;
      try {
        events.push(JSON.parse(line) as EventRecord);
      } catch {
        // a torn line: its event is treated as missing
      }
    }
    return events;
  } finally {
    await handle.close();
  }
}

/**
 * Completes the writes a killed coordinator left half done, so every state
 * on disk has its event (docs/coordinator/level2.md, "Crash recovery"). Each
 * store write is a record first and its event after; a kill between the two
 * leaves a record with no event. At start, before reclaim, for the open
 * goals and the most recently closed ones, against the end of the event log:
 *
 * - an open goal's latest attempt directory that is empty (a kill between
 *   openRun's mkdir and its record) is removed: it names a run that never
 *   started;
 * - a run whose seal is newer than its meta.json (a close killed between the
 *   two writes) has meta.json republished from the seal;
 * - a run with no `RunStarted`, or a terminal run with no `RunClosed`, gets
 *   the missing event;
 * - a goal whose file status is not where its `GoalSubmitted` /
 *   `GoalTransitioned` events end gets one `GoalTransitioned` from there to
 *   the file's status (and `GoalClosed` for a closed goal without one).
 *
 * Every event it appends carries `detail: "recovered: …"`. Goals whose
 * events are older than the log's last {@link RECOVERY_TAIL_BYTES} are left
 * alone (a crash's missing event is always among the last written).
 *
 * @returns what it repaired.
 */
export async function recoverInterruptedWrites(garden: Garden, now: () => Date = () => new Date(), scanner: OpenGoalScanner = new OpenGoalScanner(garden.paths)): Promise<Recovered> {
  const { paths } = garden;
  const recovered: Recovered = [];
  const events = await logTail(paths.coordinatorLog);
  const goalAt = new Map<string, string>();
  const goalClosedEvent = new Set<string>();
  const runStarted = new Set<string>();
  const runClosed = new Set<string>();
  const landingEvents = new Map<string, Set<string>>();
  for (const e of events) {
    if (e.run && e.type.startsWith('Land')) landingEvents.set(e.run, (landingEvents.get(e.run) ?? new Set()).add(e.type));
    if (e.type === 'GoalSubmitted' && e.goal) goalAt.set(e.goal, 'queued');
    if (e.type === 'GoalTransitioned' && e.goal && e.to) goalAt.set(e.goal, e.to);
    if (e.type === 'GoalClosed' && e.goal) goalClosedEvent.add(e.goal);
    if (e.type === 'RunStarted' && e.run) runStarted.add(e.run);
    if (e.type === 'RunClosed' && e.run) runClosed.add(e.run);
  }
  const { goals: open } = await scanner.scan();
  const openIds = new Set(open.map((g) => g.id));
  const closed: GoalRecord[] = [];
  const fromLedger = new Set<string>();
  for (const entry of await recentClosed(paths, RECOVERY_RECENT_CLOSED)) {
    if (openIds.has(entry.id)) continue; // its goal file says open: the file wins over the ledger
    fromLedger.add(entry.id);
    try {
      // Its ledger entry holds what recovery needs of a closed goal (id, closed_reason): no closed goal file is opened, but for an old bare-id line.
      closed.push((entry.closed_reason !== undefined ? goalOfEntry(entry) : undefined) ?? (await readGoal(paths, entry.id)));
    } catch {
      // unreadable: `pak2 doctor` names it
    }
  }
  for (const goal of open) {
    // openRun makes the attempt's directory, then writes its record: a kill between the two leaves an empty
    // directory that names a run that never started. It holds nothing, so it goes (and the next attempt takes its number).
    const last = (await runIdsForGoal(paths, goal.id)).at(-1);
    if (last && (await fsp.readdir(runDir(paths, last)).catch(() => ['?'])).length === 0 && !fs.existsSync(runSealFile(paths, last))) {
      await fsp.rmdir(runDir(paths, last)).catch(() => undefined);
      recovered.push(`run ${last}: its empty directory removed (the start was interrupted before its record was written)`);
    }
  }
  for (let goal of [...open, ...closed]) {
    const at = goalAt.get(goal.id);
    if (fromLedger.has(goal.id) && at !== undefined && (at !== 'closed' || !goalClosedEvent.has(goal.id))) {
      // About to record a close from a ledger entry: only what the goal file says is recorded.
      const file = await readGoal(paths, goal.id).catch(() => undefined);
      if (!file || file.status !== 'closed') continue;
      goal = file;
    }
    const run = await latestRun(paths, goal.id).catch(() => undefined);
    if (run) {
      const checked = await readRunChecked(paths, run.id).catch(() => undefined);
      if (checked?.damage && isTerminalRunStatus(checked.run.status) && checked.damage.fields.includes('status')) {
        // A close killed between its seal and meta.json: publish what pak2 wrote.
        await republishRun(paths, checked.run);
        recovered.push(`run ${run.id}: meta.json republished from its seal (the close was interrupted)`);
      }
      if (!runStarted.has(run.id) && goalAt.has(goal.id)) {
        await appendEvent(paths, { type: 'RunStarted', run: run.id, goal: goal.id, plant: run.plant, detail: `recovered: ${run.driver}/${run.model} (the start was interrupted)` }, now());
        recovered.push(`run ${run.id}: RunStarted appended`);
      }
      if (isTerminalRunStatus(run.status) && !runClosed.has(run.id) && goalAt.has(goal.id)) {
        await appendEvent(
          paths,
          {
            type: 'RunClosed',
            run: run.id,
            goal: goal.id,
            plant: run.plant,
            status: run.status,
            ...(run.failure_reason ? { reason: run.failure_reason } : {}),
            ...(run.cost ? { cost_source: run.cost.source, ...(run.cost.usd !== undefined ? { cost_usd: run.cost.usd } : {}) } : {}),
            detail: 'recovered: the close was interrupted before its event',
          },
          now(),
        );
        recovered.push(`run ${run.id}: RunClosed appended`);
      }
    }
    // A landing record written without its event (docs/landing/level2.md): its queueing, and how it ended.
    const landing = run?.worktree && goalAt.has(goal.id) ? await readLanding(paths, run.id).catch(() => undefined) : undefined;
    if (landing) {
      const seen = landingEvents.get(landing.run) ?? new Set<string>();
      const ended = LANDING_END_EVENTS[landing.state];
      for (const type of ['LandingQueued', ...(ended ? [ended] : [])] as const) {
        if (seen.has(type)) continue;
        await appendEvent(paths, { type, run: landing.run, goal: landing.goal, plant: landing.plant, status: landing.state, detail: `recovered: the landing's ${type === 'LandingQueued' ? 'queueing' : 'end'} was interrupted before its event` }, now());
        recovered.push(`landing ${landing.run}: ${type} appended`);
      }
    }
    if (at !== undefined && at !== goal.status) {
      // Out of a terminal status (closed) no pak2 path leads, however many events were lost: changed outside pak2.
      const leavable = (GOAL_TRANSITIONS[at as GoalStatus] ?? []).length > 0;
      const why = leavable ? 'the transition was interrupted before its event' : `the goal file was changed outside pak2 (pak2 makes no ${at} → ${goal.status} transition)`;
      await appendEvent(paths, { type: 'GoalTransitioned', goal: goal.id, from: at, to: goal.status, detail: `recovered: ${why}` }, now());
      recovered.push(`goal ${goal.id}: GoalTransitioned ${at} → ${goal.status} appended`);
    }
    if (at !== undefined && goal.status === 'closed' && !goalClosedEvent.has(goal.id)) {
      await appendEvent(paths, { type: 'GoalClosed', goal: goal.id, reason: goal.closed_reason, detail: 'recovered: the close was interrupted before its event' }, now());
      recovered.push(`goal ${goal.id}: GoalClosed appended`);
    }
  }
  return recovered;
}

/**
 * Repairs what a crash can leave between two writes of a dispatch: a
 * `dispatched` goal whose run never opened goes back to `queued`; one whose
 * run opened moves on to `running` (where settling takes it when its run is
 * terminal). Under the goal's lock, read again: a runner's claim holds it
 * from queued to running, so a claim in flight is never "repaired". Each
 * repaired goal in `goals` is updated in place.
 *
 * @returns the goals that could not be read or written, named.
 */
export async function repairDispatched(paths: Garden['paths'], goals: GoalRecord[], loadRun: (goal: GoalRecord) => Promise<RunRecord | undefined>, now: () => Date): Promise<GoalProblem[]> {
  const problems: GoalProblem[] = [];
  for (const goal of goals.filter((g) => g.status === 'dispatched')) {
    const repaired = await withGoalLock(paths, goal.id, async () => {
      const fresh = await readGoal(paths, goal.id);
      if (fresh.status !== 'dispatched') return fresh;
      const run = await loadRun(goal);
      return transitionGoalLocked(paths, goal.id, run ? 'running' : 'queued', { now: now() });
    }).catch((error: unknown) => {
      if (error instanceof StoreError) {
        problems.push({ file: goal.id, message: error.message });
        return undefined;
      }
      throw error;
    });
    if (repaired) Object.assign(goal, repaired);
  }
  return problems;
}
