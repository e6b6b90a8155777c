import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  GUARD_SCHEMA_VERSION,
  RAW_RUN_ACCEPTANCE,
  type DiagnosticCode,
  type ExecutionEnvelope,
  type GoalRecord,
  type GuardPhase,
  type OutcomeState,
  type OutcomeStatus,
  type RoutingAttempt,
  type RunRecord,
  type TaskOutcome,
} from '../contracts/index.js';
import type { GuardVerdict, RunGuard, RunGuardVerdictInput } from '../driver/index.js';
import { executorIdentity } from '../driver/plugins/index.js';
import { runDir, type Garden, type GardenPaths } from '../garden/index.js';
import { authoredGitEnv } from '../history/index.js';
import { appendEvent, appendJsonLine, writeJsonAtomic, type CloseRunInput } from '../store/index.js';
import { guardedEnvironment } from './env.js';
import { makeRedactor, runRedaction, type Redact, type RedactionOptions } from '../redact.js';
import { GUARD_RECORD_FILES } from './read.js';
import { decideRouteStep, routingEventOf, type RoutePlan } from './routing.js';
import { checkScope, type ScopeResult } from './scope.js';
import { diffSnapshots, patchOf, rollback, snapshotToJson, snapshotTree, type TreeChange, type TreeScope, type TreeSnapshot } from './tree.js';
import { runVerify, type VerifyResult } from './verify.js';


/**
 * pak2's working files of a guard in the run directory (docs/guarded-runs/
 * level2.md, "Interrupted runs"): the tree before the agent and after it
 * (before verify), and the verify process (pid, mark, host).
 */
export const GUARD_STATE_FILES = { baseline: 'guard-baseline.json', after: 'guard-after.json', verifyProcess: 'verify.process.json' } as const;

/** The guard in force for a goal: its own fields over `[guard]` (lists are not merged). Times in seconds. */
export interface EffectiveGuard {
  verify?: string;
  allowedFiles: string[];
  forbiddenPaths: string[];
  timeoutSeconds: number;
  envPassthrough: string[];
  contractId?: string;
  redact: boolean;
}

/** True when the goal asks for a guarded run (it carries `guard`, or a task_class). */
export function isGuarded(goal: Pick<GoalRecord, 'guard' | 'task_class'>): boolean {
  return goal.guard !== undefined || goal.task_class !== undefined;
}

/** The goal's guard merged over `[guard]` (docs/guarded-runs/level2.md, "Defaults"). */
export function effectiveGuard(goal: GoalRecord, config: Garden['config']): EffectiveGuard {
  const g = goal.guard ?? {};
  const d = config.guard;
  const verify = g.verify ?? d.verify;
  return {
    ...(verify ? { verify } : {}),
    allowedFiles: g.allowed_files ?? d.allowedFiles,
    forbiddenPaths: g.forbidden_paths ?? d.forbiddenPaths,
    timeoutSeconds: g.timeout_seconds ?? d.timeoutSeconds,
    envPassthrough: [...new Set([...d.envPassthrough, ...(g.env_passthrough ?? [])])],
    ...(g.contract_id ? { contractId: g.contract_id } : {}),
    redact: g.redact ?? d.redact,
  };
}

/** Garden-relative directories pak2 itself writes while a run is live, left out of the scope check and the rollback. */
export function pak2OwnedPaths(paths: GardenPaths, plant: string): string[] {
  const dirs = paths.split
    ? [paths.runtimeRoot]
    : [paths.goalsDir, paths.runsDir, paths.eventsDir, paths.historyDir, paths.inboxDir, paths.conversationsDir, paths.dashboardDir];
  // The plant's memory is the agent's to keep whatever the contract says (the prompt asks for it).
  dirs.push(path.join(paths.plantsDir, plant));
  const rel = dirs.map((d) => path.relative(paths.gardenRoot, d).split(path.sep).join('/'));
  return rel.filter((r) => r !== '' && !r.startsWith('..') && !path.isAbsolute(r));
}

interface Setup {
  garden: Garden;
  goal: GoalRecord;
  run: RunRecord;
  /** The coordinator's environment (what an unguarded agent would get). */
  env: NodeJS.ProcessEnv;
  now: () => Date;
  plan?: RoutePlan;
  /** The guard in force, when the garden decided it elsewhere (a runner's claim: the garden's goal and `[guard]`); default {@link effectiveGuard} of the goal over `garden.config`. */
  guard?: EffectiveGuard;
  /** More work-tree-relative paths left out of the scope check and the rollback (a runner's: its checkout's plant directory, its state directory). */
  excluded?: string[];
}

/**
 * The guard of one run (seed 001): baseline before the agent, then scope
 * check, verify, decision and rollback after it, each a line in
 * `phase_events.jsonl`; the envelope and the outcome at the close; every
 * artifact redacted. Implements the driver's {@link RunGuard} hooks.
 */
export function createRunGuard(setup: Setup): RunGuard {
  const { garden, goal, run, now } = setup;
  const { paths, config } = garden;
  const dir = runDir(paths, run.id);
  const guard = setup.guard ?? effectiveGuard(goal, config);
  const agentEnv = guardedEnvironment(setup.env, guard.envPassthrough, run.driver);
  const verifyEnv = guardedEnvironment(setup.env, guard.envPassthrough);
  // The agent's own keys and the passthrough names, with the values the coordinator holds (docs/run/level2.md, "Secrets").
  const known = Object.fromEntries(Object.keys(agentEnv).concat(guard.envPassthrough).map((name) => [name, setup.env[name]]));
  const redaction: RedactionOptions = runRedaction(known, guard.envPassthrough, guard.redact);
  const redact: Redact = makeRedactor(redaction);
  // A run in its own worktree is guarded there: the operator's tree, and other runs', are not its to judge or revert.
  const workTree = run.worktree?.path ?? paths.gardenRoot;
  const scope: TreeScope = { root: workTree, excluded: [...new Set([...pak2OwnedPaths(paths, run.plant), ...(setup.excluded ?? [])])], env: authoredGitEnv(setup.env) };
  const startedMs = Date.now();
  let before: TreeSnapshot | undefined;
  let baselineError: string | undefined;
  let executorStartMs = 0;
  // Whether the agent's main phase was started inside pak2's sandbox, as dispatch observed it (false until it started).
  let executorSandboxed = false;
  let executorDoneMs = 0;
  let verdictIn: RunGuardVerdictInput | undefined;
  let scopeResult: ScopeResult | undefined;
  let verify: VerifyResult | undefined;
  let decision: { state: OutcomeState; status: OutcomeStatus; diagnostic: DiagnosticCode } | undefined;
  let rolledBack: { performed: boolean; stdout: string; stderr: string; remaining: string[] } = { performed: false, stdout: '', stderr: '', remaining: [] };
  let changes: TreeChange[] = [];
  let finished = false;

  const phase = async (name: GuardPhase, outcome: string, detail?: string, durationMs?: number) => {
    await appendJsonLine(path.join(dir, GUARD_RECORD_FILES.phases), {
      ts: now().toISOString(),
      run_id: run.id,
      phase: name,
      outcome,
      ...(durationMs !== undefined ? { duration_ms: Math.round(durationMs) } : {}),
      ...(detail ? { detail: redact(detail) } : {}),
    });
  };

  const guardHooks: RunGuard = {
    environment: () => agentEnv,
    promptBlock: () => guardPromptBlock(guard),

    executorLaunched(facts: { sandboxed: boolean }): void {
      executorSandboxed = facts.sandboxed;
    },

    async beforeLaunch(prompt: string): Promise<CloseRunInput | undefined> {
      const t = Date.now();
      try {
        before = await snapshotTree(scope);
        // Kept on disk too: a restart after a crash in verify undoes the rejected work from it (interrupted.ts).
        await writeJsonAtomic(path.join(dir, GUARD_STATE_FILES.baseline), snapshotToJson(before));
        await phase('baseline', 'ok', `HEAD ${before.head?.slice(0, 12) ?? '(no commits)'}${before.branch ? ` on ${before.branch}` : ' (detached)'}; ${before.dirty.length} path(s) already dirty; snapshot tree ${before.tree}`, Date.now() - t);
      } catch (error) {
        baselineError = (error as Error).message;
        await phase('baseline', 'failed', baselineError, Date.now() - t);
      }
      await fsp.writeFile(path.join(dir, GUARD_RECORD_FILES.promptBundle), redact(promptBundle(prompt, guard, setup.plan)));
      if (baselineError) {
        decision = { state: 'blocked', status: 'blocked', diagnostic: 'baseline_failed' };
        await phase('decision', 'blocked', `baseline_failed: ${baselineError}`);
        await phase('rollback', 'not_needed', 'the agent never started');
        return { status: 'failure', failureReason: 'guard_error', cost: { source: 'unknown' }, errorText: `guarded run refused: pak2 could not take the baseline of the work tree (${baselineError})`, exitCode: null };
      }
      executorStartMs = Date.now();
      await phase('executor_start', 'ok', `${run.driver} ${run.model}${setup.plan ? ` (tier ${setup.plan.tierIndex} of ${setup.plan.taskClass})` : ''}`);
      return undefined;
    },

    async afterMain(input: RunGuardVerdictInput): Promise<GuardVerdict> {
      if (finished) return input;
      if (!before) {
        if (baselineError || input.launched) return input;
        // The driver could not start the agent before a baseline was taken (an unknown driver): nothing ran, nothing changed.
        finished = true;
        verdictIn = input;
        decision = { state: 'blocked', status: 'blocked', diagnostic: 'launch_failed' };
        await phase('baseline', 'skipped', 'the agent could not start; no baseline taken');
        await phase('executor_done', 'not_started', input.errorText);
        await phase('scope_check', 'skipped', 'the agent did not run');
        await phase('verify', 'skipped', 'the agent did not start');
        await phase('decision', 'blocked', 'launch_failed');
        await phase('rollback', 'not_needed', 'nothing changed');
        return input;
      }
      finished = true;
      verdictIn = input;
      executorDoneMs = Date.now();
      await phase('executor_done', input.launched ? (input.status === 'success' ? 'ok' : input.status) : 'not_started', input.launched ? `exit ${input.exitCode ?? 'by signal'}${input.failureReason ? `; ${input.failureReason}` : ''}` : input.errorText, executorDoneMs - executorStartMs);

      let after: TreeSnapshot | undefined;
      const t = Date.now();
      try {
        after = await snapshotTree(scope);
        changes = await diffSnapshots(scope, before, after);
        scopeResult = checkScope(changes, guard.allowedFiles, guard.forbiddenPaths);
        await phase('scope_check', scopeResult.violations.length ? 'violations' : 'ok', `${changes.length} changed path(s); ${scopeResult.violations.length} violation(s)${scopeResult.violations.length ? `: ${scopeResult.violations.slice(0, 5).map((v) => `${v.kind} ${v.path}`).join(', ')}` : ''}`, Date.now() - t);
      } catch (error) {
        await phase('scope_check', 'failed', (error as Error).message, Date.now() - t);
        decision = { state: 'blocked', status: 'blocked', diagnostic: 'baseline_failed' };
        await phase('verify', 'skipped', 'the tree could not be read');
        await phase('decision', 'blocked', `pak2 could not read the tree after the agent: ${(error as Error).message}`);
        await phase('rollback', 'failed', 'the tree could not be read; nothing was reverted');
        return { status: 'failure', failureReason: 'guard_error', errorText: `guarded run: pak2 could not read the work tree after the agent (${(error as Error).message}); nothing was reverted` };
      }

      let verdict: GuardVerdict = input;
      const executorOk = input.launched && input.status === 'success';
      if (!input.launched) {
        decision = { state: 'blocked', status: 'blocked', diagnostic: 'launch_failed' };
        await phase('verify', 'skipped', 'the agent did not start');
      } else if (!executorOk) {
        const stopped = input.failureReason === 'timeout' ? 'executor_timeout' : ['killed', 'coordinator_stopped', 'operator_stopped'].includes(input.failureReason ?? '') ? 'executor_killed' : 'executor_failed';
        decision = { state: 'degraded', status: 'failed', diagnostic: stopped };
        await phase('verify', 'skipped', `the agent's run did not succeed (${input.failureReason ?? input.status})`);
      } else if (scopeResult.violations.length > 0) {
        decision = { state: 'degraded', status: 'failed', diagnostic: 'scope_violation' };
        await phase('verify', 'skipped', 'scope violations: the work is rejected before verify');
        const named = scopeResult.violations.slice(0, 5).map((v) => `${v.kind} ${v.path}`).join('; ');
        verdict = { status: 'failure', failureReason: 'scope_violation', errorText: `scope violation: ${named}${scopeResult.violations.length > 5 ? ` (+${scopeResult.violations.length - 5} more)` : ''}; the agent's changes were rolled back` };
      } else if (guard.verify) {
        await writeJsonAtomic(path.join(dir, GUARD_STATE_FILES.after), snapshotToJson(after));
        verify = await runVerify(guard.verify, workTree, verifyEnv, guard.timeoutSeconds, dir, (started) => fs.writeFileSync(path.join(dir, GUARD_STATE_FILES.verifyProcess), `${JSON.stringify({ ...started, host: os.hostname() })}\n`));
        const outcome = verify.ok ? 'passed' : verify.timedOut ? 'timeout' : verify.unavailable ? 'unavailable' : 'failed';
        await phase('verify', outcome, `${guard.verify} → ${verify.timedOut ? `killed after ${guard.timeoutSeconds} s` : `exit ${verify.exitCode ?? 'by signal'}`}${verify.leftovers.length ? `; ${verify.leftovers.length} process(es) it left could not be ended: ${verify.leftovers.join(', ')}` : ''}`, verify.durationMs);
        if (verify.ok) decision = { state: 'ready', status: 'success', diagnostic: 'ready' };
        else {
          const diagnostic: DiagnosticCode = verify.timedOut ? 'verify_timeout' : verify.unavailable ? 'verify_unavailable' : 'verify_failed';
          decision = diagnostic === 'verify_unavailable' ? { state: 'blocked', status: 'blocked', diagnostic } : { state: 'degraded', status: 'failed', diagnostic };
          const tail = lastLine(redact(verify.stderr)) || lastLine(redact(verify.stdout));
          verdict = { status: 'failure', failureReason: 'verify_failed', errorText: `verify ${verify.timedOut ? `ran past ${guard.timeoutSeconds} s` : verify.unavailable ? `could not run (exit ${verify.exitCode ?? 'none'})` : `failed (exit ${verify.exitCode})`}: ${guard.verify}${tail ? ` — ${tail}` : ''}; the agent's changes were rolled back` };
        }
      } else {
        decision = { state: 'ready', status: 'success', diagnostic: 'ready' };
        await phase('verify', 'skipped', 'no verify command (goal or [guard])');
      }
      const keep = decision.state === 'ready';
      await phase('decision', keep ? 'kept' : decision.state === 'blocked' ? 'blocked' : 'rejected', decision.diagnostic);

      if (!keep && changes.length > 0) {
        const t2 = Date.now();
        try {
          const patch = await patchOf(scope, before, after, changes);
          await fsp.writeFile(path.join(dir, GUARD_RECORD_FILES.patch), redact(patch));
          const result = await rollback(scope, before, after, changes);
          let check = await snapshotTree(scope);
          let left = await diffSnapshots(scope, before, check);
          // Git's own files put back can show changes they hid (a clean filter): those go back too, once.
          if (left.length > 0 && changes.some((c) => c.kind === 'git')) {
            const again = await rollback(scope, before, check, left);
            result.stdout += `\n${again.stdout}`;
            result.stderr = [result.stderr, again.stderr].filter(Boolean).join('\n');
            check = await snapshotTree(scope);
            left = await diffSnapshots(scope, before, check);
          }
          const remaining = left.map((c) => c.path);
          rolledBack = { performed: true, stdout: result.stdout, stderr: result.stderr, remaining };
          await phase('rollback', remaining.length ? 'incomplete' : 'done', `${changes.length} path(s) reverted${remaining.length ? `; still changed: ${remaining.slice(0, 5).join(', ')}` : ''}; rejected.patch written`, Date.now() - t2);
          await appendEvent(paths, { type: 'RunRolledBack', run: run.id, goal: goal.id, plant: run.plant, detail: redact(`${decision.diagnostic}: ${changes.length} path(s) reverted${remaining.length ? `, ${remaining.length} still changed` : ''}; rejected.patch`) }, now()).catch(() => undefined);
        } catch (error) {
          rolledBack = { performed: false, stdout: '', stderr: (error as Error).message, remaining: changes.map((c) => c.path) };
          await phase('rollback', 'failed', (error as Error).message, Date.now() - t2);
        }
        if (rolledBack.remaining.length > 0) {
          decision = { state: 'blocked', status: 'blocked', diagnostic: decision.diagnostic };
          if (verdict.status === 'success') verdict = { status: 'failure', failureReason: 'guard_error', errorText: 'guarded run: the rollback left changes behind' };
          verdict = { ...verdict, errorText: `${verdict.errorText ?? ''}; rollback incomplete: ${rolledBack.remaining.slice(0, 5).join(', ')} still changed (see rejected.patch)` };
        }
      } else await phase('rollback', 'not_needed', keep ? 'the work was kept' : 'nothing changed');
      // Decided (and undone where rejected): a restart from here on must not undo it (interrupted.ts reads this file as "verify ran, no verdict").
      await fsp.rm(path.join(dir, GUARD_STATE_FILES.after), { force: true });
      return verdict;
    },

    async beforeClose(input: CloseRunInput): Promise<CloseRunInput> {
      if (!finished && before) {
        // A close that skipped afterMain (pak2 failed while finishing): the tree is still checked and rolled back.
        await guardHooks.afterMain({ launched: true, status: input.status, failureReason: input.failureReason, errorText: input.errorText, exitCode: input.exitCode ?? null });
      }
      const out: CloseRunInput = {
        ...input,
        ...(input.finalText !== undefined ? { finalText: redact(input.finalText) } : {}),
        ...(input.reflection !== undefined ? { reflection: redact(input.reflection) } : {}),
        ...(input.errorText !== undefined ? { errorText: redact(input.errorText) } : {}),
      };
      await writeRecords(out);
      // The guard ended here: its working state is no record (interrupted.ts reads it only when no outcome was written).
      for (const name of Object.values(GUARD_STATE_FILES)) await fsp.rm(path.join(dir, name), { force: true });
      // The agent's stdout and stderr, and every other file of the run, are redacted by closeRun with the same
      // secrets (one mechanism for every run); pak2's own guard records were redacted field by field as written.
      return { ...out, redaction };
    },
  };

  async function writeRecords(input: CloseRunInput): Promise<void> {
    const executorVersion = streamVersion(path.join(dir, 'events.jsonl'));
    const costUsd = input.cost.source === 'unknown' ? null : (input.cost.usd ?? null);
    // Toward a routing budget an attempt that never reached the model costs 0 (it never started, or it reported no tokens); an unknown cost stays unknown.
    const tokensKnown = input.cost.input_tokens !== undefined || input.cost.output_tokens !== undefined;
    const neverReachedModel = !verdictIn?.launched || (tokensKnown && (input.cost.input_tokens ?? 0) + (input.cost.output_tokens ?? 0) === 0 && !(costUsd && costUsd > 0));
    const d = decision ?? { state: 'degraded' as const, status: 'failed' as const, diagnostic: 'executor_failed' as const };
    const s = scopeResult ?? { attempted: [], accepted: [], blocked: [], unexpected: [], violations: [] };
    const kept = d.state === 'ready';
    // An executor that never started ran in no sandbox.
    const sandboxed = Boolean(verdictIn?.launched) && executorSandboxed;
    const outcome: TaskOutcome = {
      schema_version: GUARD_SCHEMA_VERSION,
      guarded: true,
      run_id: run.id,
      state: d.state,
      status: d.status,
      diagnostic_code: d.diagnostic,
      next_command: kept ? null : `pak2 trace ${run.id}`,
      verify_ok: verify ? verify.ok : null,
      verify_exit_code: verify?.exitCode ?? null,
      verify_stdout: verify ? redact(verify.stdout) : '',
      verify_stderr: verify ? redact(verify.stderr) : '',
      failed_command: verify && !verify.ok ? redact(guard.verify!) : null,
      verifier_was_skipped: verify === undefined,
      mutated_files: kept ? s.attempted : rolledBack.remaining,
      attempted_mutations: s.attempted,
      accepted_mutations: kept ? s.accepted : [],
      blocked_mutations: s.blocked,
      unexpected_mutations: s.unexpected,
      rollback_performed: rolledBack.performed,
      rollback_stdout: redact(rolledBack.stdout),
      rollback_stderr: redact(rolledBack.stderr),
      contract_id: guard.contractId ?? null,
      acceptance_state: guard.contractId ? (kept ? 'contract_accepted' : 'contract_rejected') : RAW_RUN_ACCEPTANCE,
      allowed_files: guard.allowedFiles,
      forbidden_paths: guard.forbiddenPaths,
      executor: {
        name: run.driver,
        version: executorVersion,
        exit_code: verdictIn?.exitCode ?? input.exitCode ?? null,
        timed_out: input.failureReason === 'timeout',
        duration_seconds: ((executorDoneMs || Date.now()) - (executorStartMs || startedMs)) / 1000,
        // What pak2 started the agent in, as observed at its launch: the bubblewrap sandbox of [coordinator] sandbox (docs/run/isolation.md), or none.
        sandbox: sandboxed,
        self_status: verdictIn ? verdictIn.agentStatus ?? null : null,
        cost_usd: costUsd,
        turns: input.numTurns ?? null,
      },
      wall_time_seconds: (Date.now() - startedMs) / 1000,
      scope_violations: s.violations,
      // pak2's own: the reason meta.json carries, and the verify command's limit.
      failure_reason: input.status === 'success' ? null : (input.failureReason ?? null),
      verify_timeout_seconds: guard.timeoutSeconds,
    };
    let routing: ExecutionEnvelope['routing'] | undefined;
    if (setup.plan) {
      const plan = setup.plan;
      const attempt: RoutingAttempt = { run_id: run.id, tier_index: plan.tierIndex, executor: run.driver, model: run.model, diagnostic_code: d.diagnostic, cost_usd: neverReachedModel ? 0 : costUsd };
      const attempts = [...plan.attempts, attempt];
      const interrupted = input.failureReason === 'coordinator_stopped' || (input.failureReason === 'operator_stopped' && Boolean(input.extra?.operator_stop?.requeue));
      const step = decideRouteStep(plan, { state: d.state, diagnostic: d.diagnostic, interrupted }, attempts);
      routing = {
        task_class: plan.taskClass,
        tier_index: plan.tierIndex,
        escalations: plan.escalations,
        ...('stop' in step ? { stop_reason: step.stop } : { next_tier_index: step.nextTierIndex }),
        attempts,
        ...(plan.pinned ? { pinned_model: goal.model } : {}),
        ...(plan.budgetUsd !== undefined ? { budget_usd: plan.budgetUsd } : {}),
      };
      const event = routingEventOf(routing, d.diagnostic);
      await appendEvent(paths, { type: event.type, run: run.id, goal: goal.id, plant: run.plant, detail: event.detail }, now()).catch(() => undefined);
    }
    const envelope: ExecutionEnvelope = {
      schema_version: GUARD_SCHEMA_VERSION,
      run_id: run.id,
      guarded: true,
      contract_id: guard.contractId ?? null,
      // seed 001: name is the label, kind the adapter under a label (absent without one).
      executor: { ...executorIdentity(run.driver, config), version: executorVersion, sandbox: sandboxed, model: run.model },
      env_passthrough: guard.envPassthrough,
      timeout_seconds: config.coordinator.runTimeoutSeconds,
      baseline: {
        head: before?.head ?? null,
        branch: before?.branch ?? null,
        ...(before ? { tree: before.tree, dirty_paths: before.dirty } : { error: baselineError ?? null }),
      },
      executor_exit_code: verdictIn?.launched ? (verdictIn.exitCode ?? null) : null,
      ...(routing ? { routing } : {}),
      verify_command: guard.verify ? redact(guard.verify) : null,
      verify_timeout_seconds: guard.timeoutSeconds,
      redacted: guard.redact,
    };
    await writeJsonAtomic(path.join(dir, GUARD_RECORD_FILES.outcome), outcome);
    await writeJsonAtomic(path.join(dir, GUARD_RECORD_FILES.envelope), envelope);
  }

  return guardHooks;
}

/**
 * The agent CLI's version as its own stream states it (claude's init line
 * carries `claude_code_version`), read from the stream's first 64 KiB; null
 * when the stream does not say (codex, a command).
 */
export function streamVersion(eventsFile: string): string | null {
  let head = '';
  try {
    const fd = fs.openSync(eventsFile, 'r');
    try {
      const buf = Buffer.alloc(64 * 1024);
      head = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
  for (const line of head.split('\n')) {
    if (!line.includes('claude_code_version')) continue;
    try {
      const version = (JSON.parse(line) as { claude_code_version?: unknown }).claude_code_version;
      if (typeof version === 'string' && version) return version;
    } catch {
      // a torn first line: no version
    }
  }
  return null;
}

/** The `# Guard` prompt block: what the run must prove, told to the agent up front. */
export function guardPromptBlock(guard: EffectiveGuard): string {
  return [
    'This is a guarded run: pak2 checks your work when you finish, and reverts all of it if a check fails.',
    guard.verify ? `- After you finish, pak2 runs \`${guard.verify}\` in ${'the garden root'}; it must exit 0 within ${guard.timeoutSeconds} s.` : '- No verify command is set; only the scope is checked.',
    guard.allowedFiles.length ? `- Change only paths matching: ${guard.allowedFiles.join(', ')}.` : '- You may change any path that is not forbidden.',
    guard.forbiddenPaths.length ? `- Never change (create, edit or delete) paths matching: ${guard.forbiddenPaths.join(', ')}.` : '',
    '- Changes made through any tool count, your shell included. Do not commit; leave the changes in the work tree.',
  ]
    .filter(Boolean)
    .join('\n');
}

function lastLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).at(-1)?.slice(0, 300) ?? '';
}

/** The prompt as sent, under a header naming the contract it runs under (`prompt_bundle.md`). */
function promptBundle(prompt: string, guard: EffectiveGuard, plan: RoutePlan | undefined): string {
  const lines = [
    '# Prompt bundle (guarded run)',
    '',
    `- verify: ${guard.verify ? `\`${guard.verify}\` (limit ${guard.timeoutSeconds} s)` : '(none)'}`,
    `- allowed_files: ${guard.allowedFiles.length ? guard.allowedFiles.join(', ') : '(any path not forbidden)'}`,
    `- forbidden_paths: ${guard.forbiddenPaths.length ? guard.forbiddenPaths.join(', ') : '(none)'}`,
    `- env_passthrough: ${guard.envPassthrough.length ? guard.envPassthrough.join(', ') : '(none)'}`,
    `- contract_id: ${guard.contractId ?? '(none)'}`,
    ...(plan ? [`- routing: ${plan.taskClass}, tier ${plan.tierIndex} (${plan.tier.driver}${plan.tier.model ? ` ${plan.tier.model}` : ''})`] : []),
    '',
    '## Prompt sent to the agent (stdin)',
    '',
    prompt,
  ];
  return `${lines.join('\n')}\n`;
}
