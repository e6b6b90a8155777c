import { authoredGitEnv, describeFailure, runGit, type GitResult } from '../history/git.js';

/** A git command on the operator's repository that failed: its words (`git worktree: …`). */
export class WorktreeGitError extends Error {
  constructor(
    readonly args: string[],
    readonly result: GitResult,
  ) {
    super(describeFailure(args, result));
  }
}

/**
 * Runs git on the operator's repository (the authored repo's environment:
 * their config and identity apply, no inherited `GIT_*` variable).
 *
 * `pin` sets git's own variables pak2 chose (a scratch `GIT_INDEX_FILE`);
 * nothing of the kind is ever taken from `env`.
 *
 * @throws WorktreeGitError when git exits non-zero (unless `allow` lists the code) or cannot start.
 */
export async function git(args: string[], cwd: string, env: NodeJS.ProcessEnv, allow: number[] = [], pin: { GIT_INDEX_FILE?: string } = {}): Promise<GitResult> {
  const result = await runGit(args, cwd, { ...authoredGitEnv(env), ...pin });
  if (!result.ok && (result.spawnError || !allow.includes(result.exitCode))) throw new WorktreeGitError(args, result);
  return result;
}

const identities = new Map<string, { at: number; args: string[] }>();
/** How long a repository's identity, once read, is taken as it is (ms): a commit is not worth two more git processes. */
const IDENTITY_TTL_MS = 60_000;

/** The identity pak2 commits as when the repository has none configured (`-c` arguments, else none); read once a minute per directory. */
export async function identityArgs(cwd: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const known = identities.get(cwd);
  if (known && Date.now() - known.at < IDENTITY_TTL_MS) return known.args;
  const name = await git(['config', 'user.name'], cwd, env, [1]);
  const email = await git(['config', 'user.email'], cwd, env, [1]);
  const args = [...(name.stdout.trim() ? [] : ['-c', 'user.name=pak2']), ...(email.stdout.trim() ? [] : ['-c', 'user.email=pak2@localhost'])];
  identities.set(cwd, { at: Date.now(), args });
  return args;
}

/** git's words when it has no identity to commit as. */
const NO_IDENTITY = /tell me who you are|identity unknown|unable to auto-detect email/i;

/**
 * `git commit <args>` in `cwd` as the repository's configured identity, or
 * as pak2 (`pak2 <pak2@localhost>`) when it has none: the commit is tried
 * first and only a refusal for want of an identity is tried again, so the
 * common case costs one git process (no `git config` reads first).
 *
 * @returns git's result; a non-zero exit listed in `allow` is returned, not thrown.
 * @throws WorktreeGitError when the commit fails otherwise.
 */
export async function commitAs(args: string[], cwd: string, env: NodeJS.ProcessEnv, allow: number[] = []): Promise<GitResult> {
  const first = await git(['commit', ...args], cwd, env, [...allow, 128]);
  if (first.ok || first.exitCode !== 128) return first;
  if (!NO_IDENTITY.test(first.stderr)) {
    if (allow.includes(128)) return first;
    throw new WorktreeGitError(['commit', ...args], first);
  }
  return git(['-c', 'user.name=pak2', '-c', 'user.email=pak2@localhost', 'commit', ...args], cwd, env, allow);
}
