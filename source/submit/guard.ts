import { ENV_NAME_PATTERN, globProblem, TASK_CLASS_PATTERN, type GoalGuard } from '../contracts/index.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';

/**
 * The guard an operator asks for (`pak2 submit --verify … --allow …`, the
 * workbench's goal form, `POST /goals`' `guard`). Present, even empty, it
 * makes the goal guarded; the goal keeps exactly the fields given and
 * `[guard]` in PAK2.toml fills the rest at dispatch
 * (docs/guarded-runs/level2.md).
 */
export interface GuardInput {
  /** A shell command run after the agent; exit 0 passes. */
  verify?: string;
  /** Globs (relative to the garden root) the agent may change. */
  allowedFiles?: string[];
  /** Globs the agent must not change. */
  forbiddenPaths?: string[];
  /** The verify command's limit, whole seconds. */
  timeoutSeconds?: number;
  /** Environment variable names passed through to the agent and verify. */
  envPassthrough?: string[];
  contractId?: string;
  /** false: do not redact the run's artifacts (`--no-redact`). */
  redact?: boolean;
}

/** The longest verify command, contract id and glob a goal takes (as GoalGuardSchema bounds them). */
const MAX_VERIFY = 65_536;
const MAX_CONTRACT = 200;
const MAX_LIST = 1000;
/** The verify limit's bounds, seconds (GoalGuardSchema). */
export const VERIFY_TIMEOUT_MAX = 2_147_483;


const unique = (list: string[]) => [...new Set(list)];

/** Checks one list of globs; `word` names the argument (`allow`, `forbid`). */
function checkGlobs(word: string, globs: string[]): string[] {
  if (globs.length > MAX_LIST) throw new UserError(`${word}: at most ${MAX_LIST} globs`);
  for (const glob of globs) {
    const problem = globProblem(glob);
    if (problem) throw new UserError(glob.trim() ? `${word} ${glob}: ${problem}` : `${word}: ${problem}`);
  }
  return unique(globs);
}

/**
 * The goal's `guard` from what the operator gave: each field checked, the
 * lists without duplicates, only the fields given.
 *
 * @throws UserError naming the argument: `verify`, `allow`, `forbid`,
 *   `verify-timeout`, `pass-env`, `contract`.
 */
export function guardOf(input: GuardInput): GoalGuard {
  const guard: GoalGuard = {};
  if (input.verify !== undefined) {
    if (!input.verify.trim()) throw new UserError('verify: the command is empty');
    if (input.verify.length > MAX_VERIFY) throw new UserError(`verify: longer than ${MAX_VERIFY} characters`);
    if (input.verify.includes('\0')) throw new UserError('verify: the command holds a NUL character');
    guard.verify = input.verify;
  }
  if (input.allowedFiles !== undefined) guard.allowed_files = checkGlobs('allow', input.allowedFiles);
  if (input.forbiddenPaths !== undefined) guard.forbidden_paths = checkGlobs('forbid', input.forbiddenPaths);
  if (input.timeoutSeconds !== undefined) {
    const t = input.timeoutSeconds;
    if (!Number.isInteger(t) || t < 1 || t > VERIFY_TIMEOUT_MAX) throw new UserError(`verify-timeout ${t}: must be a whole number of seconds from 1 to ${VERIFY_TIMEOUT_MAX}`);
    guard.timeout_seconds = t;
  }
  if (input.envPassthrough !== undefined) {
    for (const name of input.envPassthrough) {
      if (!ENV_NAME_PATTERN.test(name)) throw new UserError(name ? `pass-env ${name}: not an environment variable name (letters, digits and _, not starting with a digit)` : 'pass-env: an empty name');
    }
    if (input.envPassthrough.length > 200) throw new UserError('pass-env: at most 200 names');
    guard.env_passthrough = unique(input.envPassthrough);
  }
  if (input.contractId !== undefined) {
    if (!input.contractId.trim()) throw new UserError('contract: the contract id is empty');
    if (input.contractId.length > MAX_CONTRACT || /[\0-\x1f\x7f]/.test(input.contractId)) throw new UserError(`contract ${input.contractId.slice(0, 40)}: at most ${MAX_CONTRACT} characters, one line`);
    guard.contract_id = input.contractId;
  }
  if (input.redact !== undefined) guard.redact = input.redact;
  return guard;
}

/**
 * Checks a task class against `[routing]` in PAK2.toml.
 *
 * @throws UserError `task-class NAME: …` listing the configured classes.
 */
export function checkTaskClass(garden: Garden, taskClass: string): string {
  const known = Object.keys(garden.config.routing ?? {}).sort();
  const list = known.length ? `classes: ${known.join(', ')}` : `no [routing.<class>] table in ${garden.paths.configFile}`;
  if (!TASK_CLASS_PATTERN.test(taskClass)) throw new UserError(`task-class ${taskClass}: not a task class name (lower-case letters, digits, _ and -; ${list})`);
  if (!known.includes(taskClass)) throw new UserError(`task-class ${taskClass}: not a [routing.<class>] in PAK2.toml (${list})`);
  return taskClass;
}

/** The argument that made a goal guarded or routed, as the refusal names it. */
export function guardArgument(input: { guard?: GuardInput; taskClass?: string }): string {
  const g = input.guard;
  if (g) {
    if (g.verify !== undefined) return 'verify';
    if (g.allowedFiles !== undefined) return 'allow';
    if (g.forbiddenPaths !== undefined) return 'forbid';
    if (g.timeoutSeconds !== undefined) return 'verify-timeout';
    if (g.envPassthrough !== undefined) return 'pass-env';
    if (g.contractId !== undefined) return 'contract';
    if (g.redact === false) return 'no-redact';
    return 'guard';
  }
  return 'task-class';
}

/**
 * A guarded (or routed) goal needs its garden in a git work tree: the run's
 * baseline, scope check and rollback are git's.
 *
 * @throws UserError (exit 1) naming the argument and the garden root.
 */
export async function requireGitGarden(garden: Garden, argument: string, env: NodeJS.ProcessEnv): Promise<void> {
  // Loaded only for a guarded goal: an ordinary submit starts without the git helpers.
  const { gitWorkTreeOf } = await import('../history/git.js');
  const found = await gitWorkTreeOf(garden.paths.gardenRoot, env);
  if ('problem' in found) {
    const what = argument === 'task-class' ? 'a routed goal' : 'a guarded goal';
    throw new UserError(`${argument}: ${what} needs a git repository; the garden ${garden.paths.gardenRoot}: ${found.problem} (run git init there)`, { exitCode: 1 });
  }
}
