/**
 * The real claude CLI asks a blocking question the way its prompt says
 * (issue 28, item 7): in its own worktree, its Bash tool runs
 * `pak2 comment "$PAK2_GOAL_ID" --blocking …`, and the question is on the
 * goal's thread in the garden, the goal blocked on it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { loadGarden } from '../../source/garden/index.js';
import { createGoal, readComments, readGoal, readRun } from '../../source/store/index.js';
import { PAK2_BIN } from '../support/cli.js';
import { waitFor } from '../support/garden.js';
import { modelCalls, startModelServer, type ModelServer } from '../support/model-server.js';
import { claudeScriptedEnv, makeAgentGarden, type AgentGarden } from './agents.js';

let server: ModelServer | undefined;
let garden: AgentGarden | undefined;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await server?.close();
  server = undefined;
  garden?.cleanup();
  garden = undefined;
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=operator', '-c', 'user.email=op@localhost', ...args], { cwd, encoding: 'utf8' }).trim();
}

describe('end to end: claude asks its operator', () => {
  it('from its worktree, claude\'s Bash tool runs pak2 comment "$PAK2_GOAL_ID" --blocking: the question is on the goal\'s thread and the goal is blocked on it', async () => {
    server = await startModelServer({
      turns: [
        { text: 'I need to ask first.', toolCall: { shell: 'pak2 comment "$PAK2_GOAL_ID" --blocking "Which colour should the button be?"' } },
        { text: 'I asked the operator which colour; the goal waits for the answer.' },
        { match: REFLECTION_PROMPT.slice(0, 40), text: 'I learned to ask before painting.' },
      ],
    });
    const url = server.url;
    const made = await makeAgentGarden('claude', { watchdog_seconds: 60, run_timeout_seconds: 120 }, (stateDir) => claudeScriptedEnv(url, stateDir));
    garden = made;
    const root = made.paths.gardenRoot;
    fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'start');
    const g = { ...made, ...loadGarden(root) };
    // `pak2` on the agent's PATH is this checkout's CLI.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-bin-'));
    cleanups.push(() => fs.rmSync(bin, { recursive: true, force: true }));
    fs.writeFileSync(path.join(bin, 'pak2'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(PAK2_BIN)} "$@"\n`, { mode: 0o755 });

    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Paint the button.' });
    const coordinator = new Coordinator({ garden: g, env: { ...g.env, PATH: `${bin}${path.delimiter}${g.env.PATH ?? ''}` }, onStderr: () => undefined });
    cleanups.push(() => coordinator.stop());
    await coordinator.start();
    const runId = `${goal.id}-r1`;
    await waitFor(async () => ['success', 'failure', 'killed', 'timeout'].includes((await readRun(g.paths, runId).catch(() => undefined))?.status ?? ''), 150_000);

    const run = await readRun(g.paths, runId);
    expect(run.worktree).toBeDefined();
    const comments = await readComments(g.paths, goal.id);
    expect(comments).toMatchObject([{ author: `agent:${runId}`, run: runId, blocking: true, body: 'Which colour should the button be?' }]);
    expect((await readGoal(g.paths, goal.id)).blocked_on).toMatchObject({ comment: comments[0]!.id });
    // What the Bash tool printed went back to the model: the comment's id and the blocked notice.
    const afterTool = modelCalls(server.requests).map((r) => JSON.stringify(r)).find((body) => body.includes(comments[0]!.id));
    expect(afterTool).toContain(`goal ${goal.id} is blocked`);
  }, 200_000);
});
