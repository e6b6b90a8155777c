import fs from 'node:fs';
import path from 'node:path';
import { ALL_TEND_TRIGGERS, GOAL_ID_PATTERN, GOAL_TYPES, MAX_ACCEPTANCE_CRITERIA, MAX_CRITERION_TEXT, MAX_CRITERION_VERIFY, isTerminalLandingState, isTerminalRunStatus, PRIORITY_MAX, PRIORITY_MIN, RUN_ID_PATTERN, type AcceptanceCriterion, type GoalRecord, type GoalType, type RunRecord } from '../contracts/index.js';
import { driverProblem, getDriverPlugin, pluginDefaults } from '../driver/plugins/index.js';
import { createTendGoal, type TendGoalInput } from '../coordinator/tend-policy.js';
import { whyNobodyTakes } from '../coordinator/takers.js';
import { UserError } from '../errors.js';
import { runDir, type Garden, type ScheduleConfig } from '../garden/index.js';
import {
  appendConversationMessage,
  appendGoalSupplement as appendSupplementRecord,
  createGoal,
  latestConversation,
  listPlants,
  openConversation,
  latestRun,
  readConversation,
  readGoal,
  readLanding,
  readPlant,
  readLease,
  readRun,
  runIdsForGoal,
  storeOf,
  StoreError,
  transitionGoal,
  type ChatMessage,
  type GoalSupplement,
} from '../store/index.js';
import { checkDependencies } from './dependencies.js';
import { checkGoalDriver } from './driver-check.js';
import { checkTaskClass, guardArgument, guardOf, requireGitGarden, type GuardInput } from './guard.js';

export { VERIFY_TIMEOUT_MAX, type GuardInput } from './guard.js';
export { globProblem } from '../contracts/index.js';

/** What an operator gives to queue a goal (the CLI's flags, the workbench's form). */
export interface SubmitGoalInput {
  type: string;
  plant: string;
  body: string;
  priority?: number;
  driver?: string;
  model?: string;
  reasoningEffort?: string;
  title?: string;
  /** Queue it from a conversation: a conversation-origin durable goal, which takes supplements. */
  conversationId?: string;
  /** A guarded run (docs/guarded-runs/level2.md): present, even `{}`, makes the goal guarded. */
  guard?: GuardInput;
  /** Routes the goal through `[routing.<task_class>]`'s tiers. */
  taskClass?: string;
  /** Its own cap in USD across all its attempts (`--budget`; docs/budget/level2.md). */
  budgetUsd?: number;
  /** The goals it waits for (`--after`, `depends_on`; docs/goal/level2.md, "Dependencies"). */
  dependsOn?: string[];
  /** Submitted by a `[[schedule]]`: its name, kept as the goal's `schedule` (docs/schedules/level2.md). */
  schedule?: string;
  /** What must be true when the work is done (`--accept`, `--accept-verify`; docs/goal/level2.md, "Acceptance criteria"). */
  acceptanceCriteria?: AcceptanceCriterion[];
}

/**
 * Checks acceptance criteria as given (pure): each a `text` of one
 * non-blank line of at most {@link MAX_CRITERION_TEXT} characters, an
 * optional non-blank `verify` command, at most {@link MAX_ACCEPTANCE_CRITERIA}.
 *
 * @returns the criteria, trimmed. @throws UserError naming `accept` (the text) or `accept-verify` (the command) and which criterion.
 */
export function checkAcceptanceCriteria(criteria: readonly { text: string; verify?: string | undefined }[]): AcceptanceCriterion[] {
  if (criteria.length > MAX_ACCEPTANCE_CRITERIA) throw new UserError(`accept: ${criteria.length} criteria; a goal carries at most ${MAX_ACCEPTANCE_CRITERIA}`);
  return criteria.map((c, i) => {
    const text = typeof c.text === 'string' ? c.text.trim() : '';
    const which = `criterion ${i + 1}`;
    if (!text) throw new UserError(`accept: ${which} is empty`);
    if (/[\r\n]/.test(text)) throw new UserError(`accept: ${which} is more than one line; a criterion is one line (give several --accept)`);
    if (text.length > MAX_CRITERION_TEXT) throw new UserError(`accept: ${which} is ${text.length} characters; at most ${MAX_CRITERION_TEXT}`);
    if (c.verify === undefined) return { text };
    if (typeof c.verify !== 'string' || !c.verify.trim()) throw new UserError(`accept-verify: the command of ${which} (${JSON.stringify(text.slice(0, 40))}) is empty`);
    if (c.verify.length > MAX_CRITERION_VERIFY) throw new UserError(`accept-verify: the command of ${which} is ${c.verify.length} characters; at most ${MAX_CRITERION_VERIFY}`);
    return { text, verify: c.verify };
  });
}

/**
 * The public way to queue a goal (seed 002, submit.py `submit_goal`): checks
 * every field, then creates the goal (`queued`, GoalSubmitted). `pak2
 * submit` and the workbench's goal form both call this.
 *
 * @throws UserError naming the field: `type`, `plant` (unknown, archived, or
 *   not a valid name), `priority` (not 0–100), `driver` (unknown, or the
 *   default from PAK2_DEFAULT_DRIVER / `[defaults].driver` cannot launch),
 *   `body` (empty); for a guarded or routed goal `verify`, `allow`,
 *   `forbid`, `verify-timeout`, `pass-env`, `contract` (bad values),
 *   `task-class` (not a `[routing]` class), `after` (not a goal id, no such
 *   goal; a new goal has no dependents, so it closes no cycle), `accept` /
 *   `accept-verify` (an empty or multi-line criterion, an empty command), and (exit 1)
 *   the argument that asked for it when the garden is not in a git repository.
 */
export async function submitGoal(garden: Garden, input: SubmitGoalInput, now: Date = new Date(), env: NodeJS.ProcessEnv = process.env): Promise<GoalRecord> {
  if (!(GOAL_TYPES as readonly string[]).includes(input.type)) throw new UserError(`type ${JSON.stringify(input.type)}: must be one of ${GOAL_TYPES.join(', ')}`);
  if (input.priority !== undefined && (!Number.isInteger(input.priority) || input.priority < PRIORITY_MIN || input.priority > PRIORITY_MAX)) {
    throw new UserError(`priority ${input.priority}: must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`);
  }
  if (!input.body.trim()) throw new UserError('body: the task is empty');
  const nobody = whyNobodyTakes({ type: input.type as GoalType, assigned_to: input.plant }, garden.config);
  if (nobody) throw new UserError(`type ${input.type}: not queued; nobody could take it: ${nobody}`, { exitCode: 1 });
  if (input.budgetUsd !== undefined && !(Number.isFinite(input.budgetUsd) && input.budgetUsd > 0 && input.budgetUsd <= 1_000_000)) {
    throw new UserError(`budget ${input.budgetUsd}: an amount in USD greater than 0 (e.g. 2.50)`);
  }
  try {
    const plant = await readPlant(garden.paths, input.plant);
    if (plant.status !== 'active') throw new UserError(`plant ${input.plant}: the plant is ${plant.status}`);
  } catch (error) {
    if (error instanceof StoreError && (error.code === 'PLANT_NOT_FOUND' || error.code === 'INVALID_PLANT_NAME')) {
      const names = (await listPlants(garden.paths)).plants.map((p) => p.name);
      const why = error.code === 'INVALID_PLANT_NAME' ? 'not a valid plant name' : 'no such plant in this garden';
      throw new UserError(`plant ${input.plant}: ${why} (plants: ${names.join(', ') || 'none; run pak2 genesis'})`);
    }
    throw error;
  }
  if (input.conversationId !== undefined) {
    try {
      await readConversation(garden.paths, input.conversationId);
    } catch (error) {
      throw new UserError(`conversation ${input.conversationId}: ${(error as Error).message}`);
    }
  }
  // The driver this goal would really use (goal → env → PAK2.toml → default) must be able to launch.
  checkGoalDriver(garden, input.driver, env);
  const guard = input.guard ? guardOf(input.guard) : undefined;
  const taskClass = input.taskClass !== undefined ? checkTaskClass(garden, input.taskClass) : undefined;
  if (guard || taskClass) await requireGitGarden(garden, guardArgument(input), env);
  const dependsOn = input.dependsOn?.length ? await checkDependencies(garden, input.dependsOn, 'after') : [];
  const acceptanceCriteria = input.acceptanceCriteria?.length ? checkAcceptanceCriteria(input.acceptanceCriteria) : [];
  return createGoal(
    garden.paths,
    {
      type: input.type as GoalType,
      plant: input.plant,
      body: input.body,
      ...(input.priority !== undefined ? { priority: input.priority } : {}),
      ...(input.driver ? { driver: input.driver } : {}),
      ...(input.model ? { model: input.model } : {}),
      ...(input.reasoningEffort ? { reasoning_effort: input.reasoningEffort } : {}),
      ...(input.title ? { title: input.title } : {}),
      ...(input.conversationId ? { conversation_id: input.conversationId } : {}),
      ...(guard ? { guard } : {}),
      ...(taskClass ? { task_class: taskClass } : {}),
      ...(input.budgetUsd !== undefined ? { budget_usd: input.budgetUsd } : {}),
      ...(dependsOn.length ? { depends_on: dependsOn } : {}),
      ...(input.schedule ? { schedule: input.schedule } : {}),
      ...(acceptanceCriteria.length ? { acceptance_criteria: acceptanceCriteria } : {}),
    },
    now,
  );
}

/**
 * Submits the goal of one `[[schedule]]` firing through {@link submitGoal}
 * (docs/schedules/level2.md): the entry's type, plant, body, priority,
 * driver, model and guard, with `schedule` naming it. The coordinator calls
 * it (the session hands it over: the coordinator sits below submit).
 *
 * @throws UserError as submitGoal does (an archived plant, a driver that cannot launch…).
 */
export function submitScheduledGoal(garden: Garden, schedule: ScheduleConfig, now: Date, env: NodeJS.ProcessEnv = process.env): Promise<GoalRecord> {
  const { goal } = schedule;
  const guard = goal.guard;
  return submitGoal(
    garden,
    {
      type: goal.type,
      plant: goal.plant,
      body: goal.body,
      title: `${schedule.name} ${goal.body.split('\n')[0]}`,
      schedule: schedule.name,
      ...(goal.priority !== undefined ? { priority: goal.priority } : {}),
      ...(goal.driver ? { driver: goal.driver } : {}),
      ...(goal.model ? { model: goal.model } : {}),
      ...(guard
        ? {
            guard: {
              ...(guard.verify !== undefined ? { verify: guard.verify } : {}),
              ...(guard.allowed_files ? { allowedFiles: guard.allowed_files } : {}),
              ...(guard.forbidden_paths ? { forbiddenPaths: guard.forbidden_paths } : {}),
              ...(guard.timeout_seconds !== undefined ? { timeoutSeconds: guard.timeout_seconds } : {}),
              ...(guard.env_passthrough ? { envPassthrough: guard.env_passthrough } : {}),
              ...(guard.redact !== undefined ? { redact: guard.redact } : {}),
            },
          }
        : {}),
      ...(goal.acceptance_criteria?.length ? { acceptanceCriteria: goal.acceptance_criteria } : {}),
    },
    now,
    env,
  );
}

/** The plant that answers the chat unless told otherwise. */
export const CHAT_PLANT = 'gardener';
/** Priority of the goal an operator message queues: above ordinary work, so chat stays responsive. */
export const CHAT_PRIORITY = 80;

/** What one operator message did: the message recorded, and the conversation-origin goal it queued. */
export interface OperatorMessageResult {
  conversationId: string;
  message: ChatMessage;
  goal: GoalRecord;
}

/**
 * Sends an operator message to the garden (the chat pane and `pak2 chat`
 * share this; docs/conversation/level2.md): records it in the conversation
 * (the latest one, or a new one started by the operator), then queues a
 * `converse` goal with its conversation_id for the plant that answers. The
 * driver's conversation route answers it, resuming the conversation's agent
 * session, and records the reply.
 *
 * @throws UserError for an empty message, an unknown conversation, or a plant that cannot answer.
 */
export async function sendOperatorMessage(garden: Garden, text: string, options: { conversationId?: string; plant?: string; now?: Date } = {}): Promise<OperatorMessageResult> {
  const now = options.now ?? new Date();
  if (!text.trim()) throw new UserError('message: empty');
  const plant = options.plant ?? CHAT_PLANT;
  try {
    const record = await readPlant(garden.paths, plant);
    if (record.status !== 'active') throw new UserError(`plant ${plant}: the plant is ${record.status}; nobody can answer`);
  } catch (error) {
    if (error instanceof StoreError) {
      const names = (await listPlants(garden.paths)).plants.map((p) => p.name);
      throw new UserError(`plant ${plant}: ${error.code === 'INVALID_PLANT_NAME' ? 'not a valid plant name' : 'no such plant in this garden'} (plants: ${names.join(', ') || 'none; run pak2 genesis'})`);
    }
    throw error;
  }
  // A reply no one would ever run is refused, not queued to wait in silence (docs/runners/level2.md, "Who runs what").
  const nobody = whyNobodyTakes({ type: 'converse', assigned_to: plant }, garden.config);
  if (nobody) throw new UserError(`message: not sent; nobody could answer it: ${nobody}`, { exitCode: 1 });
  let conversationId = options.conversationId;
  if (conversationId) {
    try {
      await readConversation(garden.paths, conversationId);
    } catch (error) {
      throw new UserError(`conversation ${conversationId}: ${(error as Error).message}`);
    }
  } else conversationId = ((await latestConversation(garden.paths)) ?? (await openConversation(garden.paths, 'operator', now))).id;
  const goal = await createGoal(
    garden.paths,
    { type: 'converse', plant, body: text.trim(), conversation_id: conversationId, priority: CHAT_PRIORITY, title: `reply ${text.trim().slice(0, 40)}` },
    now,
  );
  const message = await appendConversationMessage(garden.paths, conversationId, { sender: 'operator', text: text.trim(), goal: goal.id }, now);
  return { conversationId, message, goal };
}

/**
 * Adds a supplement to a queued conversation-origin durable goal
 * (docs/goal-supplement/level2.md); it is frozen into the goal's dispatch
 * packet when the goal is dispatched and shown to the agent.
 *
 * @throws UserError naming the goal when it is unknown or not eligible.
 */
export async function appendGoalSupplement(garden: Garden, goalId: string, text: string, source: 'operator' | 'garden' = 'operator'): Promise<GoalSupplement> {
  try {
    return await appendSupplementRecord(garden.paths, goalId, text, source);
  } catch (error) {
    if (error instanceof StoreError) {
      const message = error.message.startsWith(`goal ${goalId}`) ? error.message : `goal ${goalId}: ${error.message}`;
      throw new UserError(message, { exitCode: error.code === 'GOAL_NOT_FOUND' || error.code === 'INVALID_RECORD' ? 2 : 1 });
    }
    throw error;
  }
}

/** What cancelling a goal did: closed it at once, or stopped its live run (the goal closes cancelled when the run has ended). */
export interface CancelResult {
  goal: GoalRecord;
  /** Set when the goal had a live run that was stopped. */
  stopped?: StopRunResult;
  /** Set when the goal's run had already ended (the goal was left running by a crash): what settling it from its run did, in words. */
  settled?: string;
}

/**
 * Cancels a goal (operator cancel). A queued goal goes queued → closed with
 * closed_reason `cancelled`. A dispatched or running goal has its run
 * stopped ({@link stopRun}, no requeue): the run closes `killed` /
 * `operator_stopped` and the goal closes `cancelled`. One whose run has
 * already ended (a crash left the goal open) is settled from that run
 * (`settled` says how; docs/coordinator/level2.md, "Crash recovery").
 *
 * @throws UserError for an unknown id, or a goal already closed.
 */
export async function cancelGoal(garden: Garden, id: string, now: Date = new Date()): Promise<CancelResult> {
  let goal: GoalRecord;
  try {
    goal = await readGoal(garden.paths, id);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new UserError(GOAL_ID_PATTERN.test(id) ? `ID ${id}: no such goal` : `ID ${id}: not a goal id (N-slug)`);
    throw error;
  }
  if (goal.status === 'queued') return { goal: await transitionGoal(garden.paths, id, 'closed', { closedReason: 'cancelled', now }) };
  if (goal.status === 'blocked') {
    // A blocked goal whose run still lives has it stopped; otherwise nothing runs and it closes now.
    const latest = await latestRun(garden.paths, id).catch(() => undefined);
    if (!latest || latest.status !== 'running') return { goal: await transitionGoal(garden.paths, id, 'closed', { closedReason: 'cancelled', now }) };
    return { goal, stopped: await stopRun(garden, latest.id, { now }) };
  }
  if (goal.status === 'completed') {
    // Its run is done; what is left is its work's landing, which the operator ends with a reject.
    const latest = await latestRun(garden.paths, id).catch(() => undefined);
    const landing = latest?.worktree ? await readLanding(garden.paths, latest.id).catch(() => undefined) : undefined;
    if (landing && !isTerminalLandingState(landing.state)) throw new UserError(`ID ${id}: the goal's run is done and its work waits to land (${landing.state.replace('_', ' ')}); to discard it and close the goal: pak2 reject ${latest!.id}`, { exitCode: 1 });
  }
  if (goal.status === 'closed' || goal.status === 'completed') throw new UserError(`ID ${id}: the goal is already ${goal.status}${goal.closed_reason ? ` (${goal.closed_reason})` : ''}`, { exitCode: 1 });
  const run = (await runIdsForGoal(garden.paths, id)).at(-1);
  if (!run) throw new UserError(`ID ${id}: the goal is ${goal.status} but has no run yet; try again in a moment`, { exitCode: 1 });
  const ended = await readRun(garden.paths, run).catch(() => undefined);
  if (ended && isTerminalRunStatus(ended.status)) return settleEnded(garden, goal, ended, now);
  return { goal, stopped: await stopRun(garden, run, { now }) };
}

/**
 * Cancel of a goal left `dispatched` or `running` whose latest run has
 * already ended (a crash between the run's close and the goal's): nothing
 * is left to stop, so the goal is settled from its run as a coordinator
 * pass would (its closed_reason is what the run was); one its run's end
 * puts back in the queue (an interrupted run) closes `cancelled`.
 */
async function settleEnded(garden: Garden, goal: GoalRecord, run: RunRecord, now: Date): Promise<CancelResult> {
  const { paths } = garden;
  const [{ repairDispatched }, { settleGoals }] = await Promise.all([import('../coordinator/recover.js'), import('../coordinator/settle.js')]);
  const clock = () => now;
  await repairDispatched(paths, [goal], async () => run, clock);
  await settleGoals(paths, [goal], async () => run, clock, { garden, env: process.env }).catch((error: unknown) => {
    if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) throw error;
  });
  let settled = await readGoal(paths, goal.id);
  const how = `its run ${run.id} had already ended ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`;
  if (settled.status === 'queued') {
    settled = await transitionGoal(paths, goal.id, 'closed', { closedReason: 'cancelled', now });
    return { goal: settled, settled: `${how}; the goal closed cancelled` };
  }
  if (settled.status === 'closed') return { goal: settled, settled: `${how}; the goal closed ${settled.closed_reason ?? ''} from it`.trimEnd() };
  return { goal: settled, settled: `${how}; the goal is ${settled.status}${settled.status === 'completed' ? ` and its work waits to land (to discard it: pak2 reject ${run.id})` : ''}` };
}

/** What {@link stopRun} did. */
export interface StopRunResult {
  run: string;
  /**
   * `coordinator`: the live coordinator stopped it (it closes as the process ends); `orphan`: no coordinator ran it, so it was swept and closed here;
   * `runner`: a remote runner holds it: its next heartbeat is told to stop, and the run closes when the runner finishes it.
   */
  by: 'coordinator' | 'orphan' | 'runner';
  detail: string;
}

/**
 * Stops one live run for the operator (`pak2 stop RUN`, the workbench's
 * stop key): it ends `killed` with failure_reason `operator_stopped`, its
 * stream's facts kept; its goal closes `cancelled`, or goes back to the
 * queue with `requeue`. No automatic tend follows (docs/automatic-tend).
 * The request goes to the coordinator that runs it, over the coordinator
 * socket; a run no coordinator holds (an orphan) is swept and closed here.
 *
 * @throws UserError for a bad or unknown run id, or a run that is not running.
 */
export async function stopRun(garden: Garden, runId: string, options: { requeue?: boolean; now?: Date } = {}): Promise<StopRunResult> {
  const { paths } = garden;
  if (!RUN_ID_PATTERN.test(runId)) throw new UserError(`RUN ${runId}: not a run id (N-slug-rN)`);
  let run: RunRecord;
  try {
    run = await readRun(paths, runId);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'RUN_NOT_FOUND') throw new UserError(`RUN ${runId}: no such run`);
    throw error;
  }
  if (run.status !== 'running') throw new UserError(`RUN ${runId}: the run is already ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`, { exitCode: 1 });
  if (run.runner) {
    const { requestLeaseStop } = await import('../coordinator/remote.js');
    const lease = await requestLeaseStop(garden, runId, Boolean(options.requeue), options.now ?? new Date());
    if (lease) return { run: runId, by: 'runner', detail: `runner ${lease.runner.name}@${lease.runner.host} is told at its next heartbeat (within ${Math.ceil(lease.ttl_seconds / 3)} s); the run closes when it finishes` };
  }
  // Imported here: the coordinator and driver code (execa among it) is for a stop, not for every submit.
  const [{ closeAfterMainTurn, closeFromStream }, { coordinatorSocketName, requestCoordinator }, { sweepOrphanRun, orphanAgentEnded }, { settleGoals }] = await Promise.all([
    import('../driver/dispatch.js'),
    import('../coordinator/lock.js'),
    import('../coordinator/reclaim.js'),
    import('../coordinator/reconcile.js'),
  ]);
  const reply = await requestCoordinator(coordinatorSocketName(paths), { op: 'stop', run: runId, ...(options.requeue ? { requeue: true } : {}) });
  if (reply?.ok) return { run: runId, by: 'coordinator', detail: reply.detail ?? 'stopping' };
  if (reply && !reply.ok && !/no live process/.test(reply.error)) throw new UserError(`RUN ${runId}: the coordinator refused: ${reply.error}`, { exitCode: 1 });
  // On a garden in a store, a run another checkout's coordinator launched is that coordinator's to stop: its lease tells it.
  const elsewhere = await stopElsewhere(garden, run, Boolean(options.requeue), options.now ?? new Date());
  if (elsewhere) return elsewhere;
  // No coordinator runs it: an orphan. Sweep what is left of it and close it here, from its stream.
  const goal = await readGoal(paths, run.goal);
  // An agent that had already ended, its result in the stream, was not stopped by anyone: its turn is recorded from what it reported.
  // (A guarded run's turn was never verified: it is not recorded from its own report.)
  const ended = orphanAgentEnded(garden, run.id) && goal.guard === undefined && goal.task_class === undefined;
  await sweepOrphanRun(garden, run);
  const kept = ended ? await closeAfterMainTurn(garden, run, goal.type, 'no coordinator was running it', options.now ?? new Date(), { agentEnded: true }) : undefined;
  if (kept) {
    // Settled as a pass would, its worktree's work queued to land (the landing context), never left behind.
    await settleGoals(paths, [goal], (g) => latestRun(paths, g.id), () => options.now ?? new Date(), { garden, env: process.env });
    return { run: runId, by: 'orphan', detail: `its agent had already ended (${kept.status}${kept.failure_reason ? `, ${kept.failure_reason}` : ''}); the run was recorded from what it reported, not stopped` };
  }
  await closeFromStream(garden, run, goal.type, { status: 'killed', failureReason: 'operator_stopped', errorText: 'stopped by the operator (no coordinator was running it)', by: 'operator', extra: { operator_stop: { requeue: Boolean(options.requeue) } } }, options.now ?? new Date());
  await settleGoals(paths, [goal], (g) => latestRun(paths, g.id), () => options.now ?? new Date());
  return { run: runId, by: 'orphan', detail: reply ? reply.error : 'no coordinator is running this garden; the run was swept and closed here' };
}

/**
 * Stops a local run of another checkout on a garden in a store
 * (docs/store/level2.md, "Many processes, one garden"): the run's
 * process.json is not on this machine and a coordinator holds its active
 * lease, so the stop is written on the lease, and that coordinator stops
 * the run at its next renewal (every third of the lease's TTL), as it
 * would a stop over its socket. Undefined when that is not the case.
 */
async function stopElsewhere(garden: Garden, run: RunRecord, requeue: boolean, now: Date): Promise<StopRunResult | undefined> {
  const { paths } = garden;
  if (!storeOf(paths)) return undefined;
  const { RUN_PROCESS_FILE } = await import('../driver/dispatch.js');
  if (fs.existsSync(path.join(runDir(paths, run.id), RUN_PROCESS_FILE))) return undefined;
  const current = await readLease(paths, run.id);
  if (current?.state !== 'active' || current.runner.name !== 'coordinator') return undefined;
  const { requestLeaseStop } = await import('../coordinator/remote.js');
  const lease = await requestLeaseStop(garden, run.id, requeue, now);
  if (!lease) return undefined;
  return { run: run.id, by: 'coordinator', detail: `the coordinator running it on ${lease.runner.host} is told at its next lease renewal (within ${Math.ceil(lease.ttl_seconds / 3)} s); the run closes when it has stopped` };
}

/**
 * Queues a tend goal for the gardener with its trigger metadata in the
 * record's `tend` field (docs/automatic-tend/level2.md; seed 002, submit.py
 * `submit_tend_goal`). The coordinator's automatic tend policy uses the same
 * path; priority 70, plant `gardener`.
 *
 * @throws UserError for an unknown trigger, an empty key, or a gardener that is missing or not active.
 */
export async function submitTendGoal(garden: Garden, input: TendGoalInput, now: Date = new Date()): Promise<GoalRecord> {
  if (!(ALL_TEND_TRIGGERS as readonly string[]).includes(input.trigger)) throw new UserError(`trigger ${JSON.stringify(input.trigger)}: must be one of ${ALL_TEND_TRIGGERS.join(', ')}`);
  if (!input.key.trim()) throw new UserError('key: empty');
  if (input.body !== undefined && !input.body.trim()) throw new UserError('body: the task is empty');
  try {
    const plant = await readPlant(garden.paths, CHAT_PLANT);
    if (plant.status !== 'active') throw new UserError(`plant ${CHAT_PLANT}: the plant is ${plant.status}; nobody can tend`);
  } catch (error) {
    if (error instanceof StoreError) throw new UserError(`plant ${CHAT_PLANT}: ${error.message}`);
    throw error;
  }
  return createTendGoal(garden, input, now);
}

export {
  COMMISSION_GOAL_TYPE,
  COMMISSION_PLANT,
  COMMISSION_PRIORITY,
  commissionMetadataOf,
  renderCommissionBody,
  renderCommissionContext,
  submitPlantCommissionGoal,
  type CommissionMetadata,
  type PlantCommissionInput,
} from './plant-commission.js';

// The one public submit API (seed 002, submit.py): submitGoal, appendGoalSupplement and submitTendGoal above; the manual retrospective below.
export {
  RETROSPECTIVE_DEFAULT_SINCE,
  RETROSPECTIVE_PLANT,
  RETROSPECTIVE_PRIORITY,
  submitRetrospectiveGoal,
  type RetrospectiveGoalInput,
  type RetrospectiveMetadata,
} from './retrospective.js';

// Comments and blocking questions (seed 004, docs/runners/level2.md).
export { answerQuestion, goalComments, postComment, type CommentInput, type CommentResult } from './comments.js';
export * from './landing.js';
export * from './budget.js';
// The inbox's notes (docs/workbench/level2.md, "Panes").
export { readInboxNote, type ReadNote } from './inbox.js';

// Goal dependencies (docs/goal/level2.md, "Dependencies").
export { changeDependencies, checkDependencies, retryGoal, retrySettings, type DependencyChange, type RetryOptions, type RetryResult } from './dependencies.js';
export { addSchedule, listSchedules, removeSchedule, scheduleBlock, type ScheduleInput, type ScheduleView } from './schedules.js';
export { ackAttention, type AckResult } from './attention.js';
export { setTendsPaused, type TendPauseResult } from './tend.js';
