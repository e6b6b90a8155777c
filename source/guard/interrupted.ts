import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { RunRecord } from '../contracts/index.js';
import { sweepRun } from '../driver/process-tree.js';
import { runDir, type Garden } from '../garden/index.js';
import { authoredGitEnv } from '../history/index.js';
import { appendEvent, appendJsonLine } from '../store/index.js';
import { GUARD_RECORD_FILES } from './read.js';
import { GUARD_STATE_FILES, pak2OwnedPaths } from './run-guard.js';
import { diffSnapshots, patchOf, rollback, snapshotFromJson, snapshotTree, type TreeScope, type TreeSnapshot } from './tree.js';
import { VERIFY_FILES } from './verify.js';

function readJson(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function readSnapshot(file: string): TreeSnapshot | undefined {
  const value = readJson(file);
  try {
    return value === undefined ? undefined : snapshotFromJson(value);
  } catch {
    return undefined;
  }
}

/**
 * Finishes, at restart, the guard of a run whose coordinator died before
 * the guard decided (docs/guarded-runs/level2.md, "Interrupted runs"): a run
 * with no `task_outcome.json`. Its verify process, if one was started on
 * this host, is ended (its group, its mark, what holds its output). When the
 * coordinator died with the agent's work judged but not yet decided (the
 * tree after the agent was stored: verify was running), the work was never
 * accepted, so it is undone as a rejected run's is: every path the agent
 * changed is put back as the baseline had it (the operator's dirty bytes
 * included), `rejected.patch` keeps it, `RunRolledBack` is appended. A path
 * that changed again since the agent ended (by whoever) is left as it is and
 * named. Never throws: what could not be done is said in the words.
 *
 * @returns one line for the run's error (what was ended and undone), or undefined when there was nothing to finish.
 */
export async function finishInterruptedGuard(garden: Garden, run: RunRecord, env: NodeJS.ProcessEnv, now: Date): Promise<string | undefined> {
  const { paths } = garden;
  const dir = runDir(paths, run.id);
  if (fs.existsSync(path.join(dir, GUARD_RECORD_FILES.outcome))) return undefined;
  const words: string[] = [];
  const verifyProcess = readJson(path.join(dir, GUARD_STATE_FILES.verifyProcess)) as { pid?: number; mark?: string; host?: string } | undefined;
  if (verifyProcess?.mark && verifyProcess.host === os.hostname()) {
    const left = await sweepRun(verifyProcess.pid, verifyProcess.mark, [path.join(dir, VERIFY_FILES.stdout), path.join(dir, VERIFY_FILES.stderr)], 3000).catch(() => []);
    words.push(`its verify (pid ${verifyProcess.pid ?? '?'}) was ended${left.length ? `; ${left.length} process(es) of it could not be: ${left.map((p) => `${p.pid} ${p.command}`).join(', ')}` : ''}`);
  }
  const before = readSnapshot(path.join(dir, GUARD_STATE_FILES.baseline));
  const after = readSnapshot(path.join(dir, GUARD_STATE_FILES.after));
  const phase = (name: string, outcome: string, detail: string) => appendJsonLine(path.join(dir, GUARD_RECORD_FILES.phases), { ts: now.toISOString(), run_id: run.id, phase: name, outcome, detail }).catch(() => undefined);
  if (before && after) {
    const scope: TreeScope = { root: run.worktree?.path ?? paths.gardenRoot, excluded: pak2OwnedPaths(paths, run.plant), env: authoredGitEnv(env) };
    try {
      const current = await snapshotTree(scope);
      const changes = await diffSnapshots(scope, before, after);
      const since = new Set((await diffSnapshots(scope, after, current)).map((c) => c.path));
      const undo = changes.filter((c) => !since.has(c.path));
      const moved = changes.filter((c) => since.has(c.path)).map((c) => c.path);
      await phase('verify', 'interrupted', 'the coordinator died while verify ran; no verdict');
      await phase('decision', 'rejected', 'verify_interrupted: the work was never accepted');
      if (undo.length > 0) {
        await fsp.writeFile(path.join(dir, GUARD_RECORD_FILES.patch), await patchOf(scope, before, after, undo));
        const result = await rollback(scope, before, current, undo);
        const left = [...result.unrestored, ...moved];
        await phase('rollback', left.length ? 'incomplete' : 'done', `${undo.length} path(s) reverted at restart${left.length ? `; still changed: ${left.slice(0, 5).join(', ')}` : ''}; rejected.patch written`);
        await appendEvent(paths, { type: 'RunRolledBack', run: run.id, goal: run.goal, plant: run.plant, detail: `verify_interrupted: ${undo.length} path(s) reverted at restart${left.length ? `, ${left.length} still changed` : ''}; rejected.patch` }, now).catch(() => undefined);
        words.push(`the agent's change (never accepted: verify did not finish) was reverted to the run's baseline: ${undo.length} path(s)${result.unrestored.length ? `; not restored: ${result.unrestored.slice(0, 5).join(', ')}` : ''}`);
      } else await phase('rollback', 'not_needed', 'nothing of the agent\'s is left to revert');
      if (moved.length) words.push(`changed again since the agent ended, left as they are: ${moved.slice(0, 5).join(', ')}${moved.length > 5 ? ` (+${moved.length - 5} more)` : ''}`);
    } catch (error) {
      await phase('rollback', 'failed', (error as Error).message);
      words.push(`its work could not be reverted (${(error as Error).message})`);
    }
  }
  // Finished with: the guard's working state is no record, as at a close the guard saw (docs/guarded-runs/level2.md).
  for (const name of Object.values(GUARD_STATE_FILES)) await fsp.rm(path.join(dir, name), { force: true }).catch(() => undefined);
  return words.length ? words.join('; ') : undefined;
}
