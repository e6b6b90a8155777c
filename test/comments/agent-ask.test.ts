/**
 * Every agent knows how to ask (issue 28, item 7; docs/runners/level2.md,
 * "An agent's comments"): a local agent gets PAK2_GOAL_ID and PAK2_RUN_ID,
 * its prompt says how to ask a blocking question whether or not its goal
 * has comments, and `pak2 comment "$PAK2_GOAL_ID" --blocking …` run by the
 * agent posts to the garden — from the garden's tree and from the agent's
 * own worktree (whose checkout of PAK2.toml names no goals).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentGardenRoot } from '../../source/cli/context.js';
import { Coordinator } from '../../source/coordinator/index.js';
import { ASK_LINE, PROMPT_HEADINGS } from '../../source/driver/index.js';
import { loadGarden, runDir, type Garden } from '../../source/garden/index.js';
import { createGoal, readComments, readGoal, readRun } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=operator', '-c', 'user.email=op@localhost', ...args], { cwd, encoding: 'utf8' }).trim();
}

/** A directory holding `pak2`, a shim for this checkout's CLI: put first on PATH, `pak2` is the pak2 under test. */
function pak2OnPath(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-bin-'));
  fs.writeFileSync(path.join(dir, 'pak2'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(PAK2_BIN)} "$@"\n`, { mode: 0o755 });
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An agent that records its PAK2_* environment and working directory, then asks its blocking question the way its prompt says. */
const ASKER = `cat > /dev/null
if [ "$PAK2_PHASE" = reflection ]; then echo '{"type":"result","status":"success","text":"learned"}'; exit 0; fi
env | grep '^PAK2_' | sort > "$PAK2_RUN_DIR/agent-env.txt"
pwd > "$PAK2_RUN_DIR/agent-cwd.txt"
pak2 comment "$PAK2_GOAL_ID" --blocking "Which colour?" > "$PAK2_RUN_DIR/comment.out" 2> "$PAK2_RUN_DIR/comment.err"
echo "exit $?" >> "$PAK2_RUN_DIR/comment.out"
echo '{"type":"result","status":"success","text":"asked"}'
`;

async function askerGarden(options: { git: boolean }): Promise<Garden> {
  const script = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-asker-'));
  cleanups.push(() => fs.rmSync(script, { recursive: true, force: true }));
  fs.writeFileSync(path.join(script, 'asker.sh'), ASKER);
  const made = await makeTestGarden({ extraToml: `[drivers.asker]\ncommand = ${JSON.stringify(['sh', path.join(script, 'asker.sh')])}` });
  cleanups.push(() => made.cleanup());
  const root = made.paths.gardenRoot;
  if (options.git) {
    fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'start');
  }
  return loadGarden(root);
}

async function runAsker(g: Garden): Promise<{ goalId: string; runId: string; env: string; cwd: string; comment: string }> {
  const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Paint the button.', driver: 'asker' });
  const coordinator = new Coordinator({ garden: g, env: { ...process.env, PATH: `${pak2OnPath()}${path.delimiter}${process.env.PATH ?? ''}` }, onStderr: () => undefined });
  cleanups.push(() => coordinator.stop());
  await coordinator.start();
  const runId = `${goal.id}-r1`;
  await waitFor(async () => ['success', 'failure', 'killed'].includes((await readRun(g.paths, runId).catch(() => undefined))?.status ?? ''), 30_000);
  const dir = runDir(g.paths, runId);
  const read = (name: string) => fs.readFileSync(path.join(dir, name), 'utf8');
  return { goalId: goal.id, runId, env: read('agent-env.txt'), cwd: read('agent-cwd.txt').trim(), comment: `${read('comment.out')}${read('comment.err')}` };
}

describe('a local agent asks a blocking question', () => {
  for (const isolation of ['tree', 'worktree'] as const) {
    it(`${isolation}: the agent has PAK2_GOAL_ID and PAK2_RUN_ID, and pak2 comment "$PAK2_GOAL_ID" --blocking posts its question to the garden`, async () => {
      const g = await askerGarden({ git: isolation === 'worktree' });
      const ran = await runAsker(g);
      expect(ran.env).toContain(`PAK2_GOAL_ID=${ran.goalId}\n`);
      expect(ran.env).toContain(`PAK2_RUN_ID=${ran.runId}\n`);
      const run = await readRun(g.paths, ran.runId);
      if (isolation === 'worktree') {
        expect(run.worktree).toBeDefined();
        expect(fs.realpathSync(ran.cwd)).toBe(fs.realpathSync(run.worktree!.path));
        // The worktree holds the repository's own PAK2.toml: its runtime root is not the garden's.
        expect(fs.existsSync(path.join(ran.cwd, 'PAK2.toml'))).toBe(true);
      } else expect(run.worktree).toBeUndefined();
      const comments = await readComments(g.paths, ran.goalId);
      expect(ran.comment).toMatch(new RegExp(`^${comments[0]?.id}\ngoal ${ran.goalId} is blocked\nexit 0\n$`));
      expect(comments).toMatchObject([{ author: `agent:${ran.runId}`, run: ran.runId, blocking: true, body: 'Which colour?' }]);
      expect((await readGoal(g.paths, ran.goalId)).blocked_on).toMatchObject({ comment: comments[0]!.id });
    }, 60_000);
  }

  it('the prompt of a goal with no comments says how to ask, in the run block', async () => {
    const g = await askerGarden({ git: false });
    const ran = await runAsker(g);
    const prompt = fs.readFileSync(path.join(runDir(g.paths, ran.runId), 'prompt.md'), 'utf8');
    const block = prompt.slice(prompt.indexOf(PROMPT_HEADINGS.run), prompt.indexOf(PROMPT_HEADINGS.task));
    expect(block).toContain(ASK_LINE);
    expect(ASK_LINE).toContain('pak2 comment "$PAK2_GOAL_ID" --blocking --wait "YOUR QUESTION"');
    expect(prompt).not.toContain(PROMPT_HEADINGS.comments);
  }, 60_000);
});

describe('the garden of a command run in an agent worktree', () => {
  it('is PAK2_GARDEN when the nearest PAK2.toml is the worktree\'s own copy; a garden of its own inside it, or anywhere else, is found as usual', () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-wt-'));
    cleanups.push(() => fs.rmSync(base, { recursive: true, force: true }));
    const worktree = path.join(base, 'garden', '.runtime', 'worktrees', '1-x-r1');
    fs.mkdirSync(path.join(worktree, 'src'), { recursive: true });
    fs.mkdirSync(path.join(worktree, 'fixture'), { recursive: true });
    fs.writeFileSync(path.join(worktree, 'PAK2.toml'), '');
    fs.writeFileSync(path.join(worktree, 'fixture', 'PAK2.toml'), '');
    const env = { PAK2_GARDEN: path.join(base, 'garden'), PAK2_WORKTREE: worktree };
    expect(agentGardenRoot({ cwd: worktree, env })).toBe(env.PAK2_GARDEN);
    expect(agentGardenRoot({ cwd: path.join(worktree, 'src'), env })).toBe(env.PAK2_GARDEN);
    expect(agentGardenRoot({ cwd: path.join(worktree, 'fixture'), env })).toBeUndefined();
    expect(agentGardenRoot({ cwd: base, env })).toBeUndefined();
    expect(agentGardenRoot({ cwd: worktree, env: { PAK2_GARDEN: env.PAK2_GARDEN } })).toBeUndefined();
  });

  it('pak2 comment in the worktree reads the garden\'s thread (the CLI, as the agent runs it)', async () => {
    const g = await askerGarden({ git: true });
    const ran = await runAsker(g);
    const run = await readRun(g.paths, ran.runId);
    const thread = await runCli(['comment', ran.goalId], { cwd: run.worktree!.path, env: { PAK2_GARDEN: g.paths.gardenRoot, PAK2_WORKTREE: run.worktree!.path, PAK2_RUN_ID: ran.runId } });
    expect(thread.stderr).toBe('');
    expect(thread.stdout).toContain('Which colour?');
    // Without the run's environment the worktree's own PAK2.toml is the garden: its runtime root holds no such goal.
    const bare = await runCli(['comment', ran.goalId], { cwd: run.worktree!.path, env: { PAK2_GARDEN: '', PAK2_WORKTREE: '' } });
    expect(bare.code).not.toBe(0);
  }, 60_000);
});
