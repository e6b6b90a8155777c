import picomatch from 'picomatch';
import type { ScopeViolation } from '../contracts/index.js';
import type { TreeChange } from './tree.js';

/** The five mutation lists of task_outcome.json (seed 001), before the decision sets `mutated_files`. */
export interface ScopeResult {
  attempted: string[];
  accepted: string[];
  /** Changed paths that match `forbidden_paths`. */
  blocked: string[];
  /** Changed paths outside a non-empty `allowed_files`. */
  unexpected: string[];
  violations: ScopeViolation[];
}

const describe: Record<TreeChange['status'], string> = { A: 'created', M: 'modified', D: 'deleted' };
const how: Partial<Record<TreeChange['kind'], string>> = { index: ' (in the index)', commit: ' (by a commit)', ref: ' (a ref)' };

/**
 * Checks what changed against the contract (seed 001, "scope_check").
 * Globs are picomatch globs relative to the garden root, dot files
 * included (`.env`, `.git/**`); a pattern naming a directory (`secrets/`)
 * covers everything under it. A path both forbidden and outside
 * `allowed_files` is one violation, `forbidden_path`. A change to git's
 * own configuration (`.git/config`, `.git/hooks/*`, `.git/info/*`) is
 * always a `forbidden_path` violation; HEAD and refs (a commit, a branch, a
 * tag) are checked against `forbidden_paths` only (`.git/**`).
 */
export function checkScope(changes: TreeChange[], allowedFiles: string[], forbiddenPaths: string[]): ScopeResult {
  const expand = (globs: string[]) => globs.flatMap((g) => (g.endsWith('/') ? [`${g}**`] : [g, `${g}/**`]));
  const forbidden = forbiddenPaths.length ? picomatch(expand(forbiddenPaths), { dot: true }) : () => false;
  const allowed = allowedFiles.length ? picomatch(expand(allowedFiles), { dot: true }) : () => true;
  const result: ScopeResult = { attempted: [], accepted: [], blocked: [], unexpected: [], violations: [] };
  for (const change of changes) {
    result.attempted.push(change.path);
    if (change.kind === 'git' && change.path !== '.git/HEAD') {
      // Git's own configuration decides what git shows (a clean filter can hide an edit): never the agent's to change here.
      result.blocked.push(change.path);
      result.violations.push({ kind: 'forbidden_path', path: change.path, detail: `${describe[change.status]} git's own configuration (config, hooks, info/): never the agent's to change in a guarded run` });
    } else if (forbidden(change.path)) {
      result.blocked.push(change.path);
      result.violations.push({ kind: 'forbidden_path', path: change.path, detail: `${describe[change.status]}${how[change.kind] ?? ''} a path matching forbidden_paths (${forbiddenPaths.join(', ')})` });
    } else if (!change.path.startsWith('.git/') && !allowed(change.path)) {
      result.unexpected.push(change.path);
      result.violations.push({ kind: 'outside_allowed', path: change.path, detail: `${describe[change.status]}${how[change.kind] ?? ''} a path outside allowed_files (${allowedFiles.join(', ')})` });
    } else result.accepted.push(change.path);
  }
  return result;
}
