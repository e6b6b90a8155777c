/**
 * Gardens for worktree and landing tests: a split-root garden that is a git
 * repository with history, a `wt` command driver running
 * test/fixtures/work-tree-agent.mjs (its goal body says what it writes), and
 * helpers to run goals through a real coordinator.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GoalRecord } from '../../source/contracts/index.js';
import { Coordinator } from '../../source/coordinator/index.js';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { createGoal, readGoal } from '../../source/store/index.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

export const WORK_TREE_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/work-tree-agent.mjs');

export type GitGarden = Garden & { cleanup: () => void; root: string };

/** Runs git in `cwd`, returning its trimmed stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 'operator', GIT_AUTHOR_EMAIL: 'op@localhost', GIT_COMMITTER_NAME: 'operator', GIT_COMMITTER_EMAIL: 'op@localhost' } }).trim();
}

/** A git garden on branch `main` with one commit holding `files` (and the garden's own files), `.runtime/` ignored. */
export async function makeGitGarden(options: { coordinator?: Record<string, number | string>; toml?: string; files?: Record<string, string> } = {}): Promise<GitGarden> {
  const coordinator = { interval_seconds: 3600, ...options.coordinator };
  const base = await makeTestGarden({
    coordinator: Object.fromEntries(Object.entries(coordinator).filter(([, v]) => typeof v === 'number')) as Record<string, number>,
    extraToml: [
      `[drivers.wt]\ncommand = ${JSON.stringify([process.execPath, WORK_TREE_AGENT])}`,
      options.toml ?? '',
    ].join('\n'),
    files: { '.gitignore': '.runtime/\n', 'README.md': '# Project\n\nA line.\n', ...options.files },
  });
  const root = base.paths.gardenRoot;
  // String-valued [coordinator] keys (isolation) go in by hand: makeTestGarden writes numbers.
  const strings = Object.entries(coordinator).filter(([, v]) => typeof v === 'string');
  if (strings.length) {
    const toml = fs.readFileSync(path.join(root, 'PAK2.toml'), 'utf8').replace('[coordinator]\n', `[coordinator]\n${strings.map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join('\n')}\n`);
    fs.writeFileSync(path.join(root, 'PAK2.toml'), toml);
  }
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'the project');
  return { ...loadGarden(root), cleanup: base.cleanup, root };
}

/** Submits a `wt` goal whose body is `lines` (the agent's instructions). */
export function submitWork(g: Garden, lines: string[], extra: Partial<Pick<GoalRecord, 'type' | 'guard' | 'priority'>> = {}): Promise<GoalRecord> {
  return createGoal(g.paths, { type: extra.type ?? 'spike', plant: 'gardener', body: lines.join('\n'), driver: 'wt', ...(extra.guard ? { guard: extra.guard } : {}), ...(extra.priority !== undefined ? { priority: extra.priority } : {}) });
}

/** Runs a live coordinator until every goal in `ids` is closed (or `until` holds), then stops it. */
export async function runUntil(g: Garden, ids: string[], until?: () => Promise<boolean>, timeoutMs = 60_000, env: NodeJS.ProcessEnv = process.env): Promise<Coordinator> {
  const coordinator = new Coordinator({ garden: g, onStderr: () => undefined, env });
  await coordinator.start();
  try {
    await waitFor(async () => (until ? await until() : (await Promise.all(ids.map((id) => readGoal(g.paths, id)))).every((x) => x.status === 'closed')), timeoutMs);
  } finally {
    await coordinator.stop();
  }
  return coordinator;
}
