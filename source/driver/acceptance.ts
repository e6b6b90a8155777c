import fsp from 'node:fs/promises';
import path from 'node:path';
import type { AcceptanceCriterion, AcceptanceItemRecord, FailureReason, RunStatus } from '../contracts/index.js';
import { runVerify, type VerifyResult } from '../guard/verify.js';

/**
 * A goal's acceptance criteria (seed 004, "The write-back contract" 5;
 * docs/goal/level2.md, "Acceptance criteria"): given to the agent in the
 * prompt, then checked once its run ends, each reported as verified or not
 * with the evidence pak2 saw. pak2 never reports a criterion verified
 * without evidence: only a `verify` command that exits 0 is evidence.
 */

/** The directory of a run that keeps each criterion's verify output: `acceptance/<n>/verify.{stdout,stderr}.log`, n from 1. */
export const ACCEPTANCE_DIR = 'acceptance';

/** How much of a verify command's output an item's evidence quotes (characters, its end). */
const EVIDENCE_TAIL = 300;

/**
 * The prompt's `# Acceptance Criteria` block: each criterion, with the
 * command that will check it, and what is reported for one without. Empty
 * string for no criteria.
 */
export function acceptancePromptBlock(criteria: readonly AcceptanceCriterion[] | undefined): string {
  if (!criteria?.length) return '';
  const lines = criteria.map((c, i) => `${i + 1}. ${c.text}${c.verify ? `\n   Checked after you finish by running \`${c.verify}\` in your working directory; it must exit 0.` : '\n   No command checks this one: it is reported "not verified" whatever you say, so make the work show it.'}`);
  return ['When you finish, the operator sees each of these reported as verified or not, with the evidence:', '', ...lines].join('\n');
}

/** Whether a closing run's criteria are checked: `run`, or `skip` with the reason each is reported unverified. */
export type AcceptanceCheckDecision = { run: true } | { run: false; why: string };

/**
 * Decides, from how the run is closing, whether its criteria are checked
 * now (pure): only a run that is closing `success` left work to check; any
 * other end leaves them unverified, saying how the run ended.
 */
export function decideAcceptanceCheck(input: { status: RunStatus; failureReason?: FailureReason | undefined }): AcceptanceCheckDecision {
  if (input.status === 'success') return { run: true };
  return { run: false, why: `not checked: the run ended ${input.status}${input.failureReason ? ` (${input.failureReason})` : ''} before its criteria were checked` };
}

/** Every criterion reported unverified for the same reason (`why`, the evidence). */
export function uncheckedAcceptance(criteria: readonly AcceptanceCriterion[], why: string): AcceptanceItemRecord[] {
  return criteria.map((c) => ({ item: c.text, verified: false, evidence: why, criterion: true, result: 'unverified' as const, ...(c.verify ? { verify: c.verify } : {}) }));
}

/** The last `EVIDENCE_TAIL` characters of a command's output, on one line. */
function tailOf(result: VerifyResult): string {
  const text = `${result.stdout}\n${result.stderr}`.replace(/\s+/g, ' ').trim();
  return text.length > EVIDENCE_TAIL ? `…${text.slice(-EVIDENCE_TAIL)}` : text;
}

/** One criterion's item from its verify command's result (pure). */
export function criterionItem(criterion: AcceptanceCriterion & { verify: string }, result: VerifyResult, files: string, timeoutSeconds: number): AcceptanceItemRecord {
  const seconds = `${(result.durationMs / 1000).toFixed(1)} s`;
  const output = tailOf(result);
  const said = output ? `: ${output}` : '';
  const base = { item: criterion.text, criterion: true, verify: criterion.verify };
  if (result.ok) return { ...base, verified: true, result: 'verified', evidence: `\`${criterion.verify}\` exited 0 in ${seconds}${said}` };
  const how = result.timedOut
    ? `ran past its limit of ${timeoutSeconds} s and was stopped`
    : result.unavailable
      ? `could not run (exit ${result.exitCode ?? 'none'})`
      : `exited ${result.exitCode ?? 'by a signal'}`;
  return { ...base, verified: false, result: 'failed', evidence: `\`${criterion.verify}\` ${how}${said} (output: ${files})` };
}

/** What {@link checkAcceptance} needs: where and how the commands run. */
export interface AcceptanceCheckContext {
  /** The run's working directory (its worktree, the garden root, or a runner's checkout). */
  cwd: string;
  /** The environment the commands get (the agent's). */
  env: NodeJS.ProcessEnv;
  /** Each command's limit, seconds. */
  timeoutSeconds: number;
  /** The run directory: the output goes under `acceptance/<n>/`. */
  runDir: string;
}

/**
 * Checks a goal's criteria after its run, in order: a criterion with a
 * `verify` command runs it (`sh -c`, in `cwd`, its own process group,
 * stdin closed, output to files under `acceptance/<n>/`, stopped past
 * `timeoutSeconds`; the guard's runVerify) and is `verified` on exit 0, else
 * `failed`; one without a command is `unverified`, saying so. Never throws:
 * a command that cannot start is `failed` with why.
 */
export async function checkAcceptance(criteria: readonly AcceptanceCriterion[], ctx: AcceptanceCheckContext): Promise<AcceptanceItemRecord[]> {
  const items: AcceptanceItemRecord[] = [];
  for (const [i, criterion] of criteria.entries()) {
    if (!criterion.verify) {
      items.push({ item: criterion.text, verified: false, criterion: true, result: 'unverified', evidence: 'not verified: the criterion has no verify command, and the agent’s own word is no evidence' });
      continue;
    }
    const outDir = path.join(ctx.runDir, ACCEPTANCE_DIR, String(i + 1));
    const files = path.join(ACCEPTANCE_DIR, String(i + 1), 'verify.*.log');
    try {
      await fsp.mkdir(outDir, { recursive: true });
      const result = await runVerify(criterion.verify, ctx.cwd, ctx.env, ctx.timeoutSeconds, outDir);
      items.push(criterionItem({ ...criterion, verify: criterion.verify }, result, files, ctx.timeoutSeconds));
    } catch (error) {
      items.push({ item: criterion.text, verified: false, criterion: true, result: 'failed', verify: criterion.verify, evidence: `\`${criterion.verify}\` could not be run: ${(error as Error).message}` });
    }
  }
  return items;
}

/**
 * A runner's reported acceptance items, completed against the goal's
 * criteria (pure; docs/runners/level2.md, "runs_finish"): every criterion
 * the runner did not report (an older runner, or one that lost it) is added
 * unverified, saying so, so the record never drops a criterion.
 */
export function completeReportedAcceptance<T extends { item: string; criterion?: boolean }>(criteria: readonly AcceptanceCriterion[] | undefined, reported: readonly T[]): (T | AcceptanceItemRecord)[] {
  const named = new Set(reported.filter((a) => a.criterion).map((a) => a.item));
  const missing = (criteria ?? []).filter((c) => !named.has(c.text));
  if (!missing.length) return [...reported];
  const items = uncheckedAcceptance(missing, 'not reported by the runner');
  // Criteria first, as a runner orders them: the runner's own checks after.
  const firstOwn = reported.findIndex((a) => !a.criterion);
  return firstOwn < 0 ? [...reported, ...items] : [...reported.slice(0, firstOwn), ...items, ...reported.slice(firstOwn)];
}
