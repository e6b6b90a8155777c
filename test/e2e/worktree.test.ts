/**
 * The real claude and codex CLIs, each in a worktree of its own
 * (docs/landing/level2.md): the agent writes through its real tools in its
 * worktree, the reflection resumes the session there (claude's --resume
 * needs the same directory), and the work lands on main.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { loadGarden } from '../../source/garden/index.js';
import { createGoal, readGoal, readLanding, readRun } from '../../source/store/index.js';
import { startModelServer, type ModelScript, type ModelServer } from '../support/model-server.js';
import { claudeScriptedEnv, codexScriptedConfig, cycleUntilIdle, makeAgentGarden, type AgentGarden } from './agents.js';

let server: ModelServer | undefined;
let garden: AgentGarden | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  garden?.cleanup();
  garden = undefined;
});

const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=operator', '-c', 'user.email=op@localhost', ...args], { cwd, encoding: 'utf8' }).trim();
}

/** A git garden for `driver` on main, committed, with the operator's own uncommitted edit of notes.txt. */
async function gitGarden(driver: 'claude' | 'codex', script: ModelScript): Promise<AgentGarden> {
  server = await startModelServer(script);
  const url = server.url;
  const made = await makeAgentGarden(
    driver,
    { watchdog_seconds: 60, run_timeout_seconds: 120 },
    (stateDir) => {
      if (driver === 'claude') return claudeScriptedEnv(url, stateDir);
      fs.writeFileSync(path.join(stateDir, 'config.toml'), codexScriptedConfig(url));
      return { CODEX_HOME: stateDir, PAK2_TEST_MODEL_KEY: 'test-key' };
    },
    driver === 'codex' ? 'gpt-5' : undefined,
  );
  garden = made;
  const root = made.paths.gardenRoot;
  fs.writeFileSync(path.join(root, 'notes.txt'), 'committed\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'start');
  fs.writeFileSync(path.join(root, 'notes.txt'), 'committed\noperator edit, not committed\n');
  return { ...made, ...loadGarden(root) };
}

describe('end to end: real agent CLIs in worktrees of their own', () => {
  for (const driver of ['claude', 'codex'] as const) {
    it(`${driver}: writes in its worktree, reflects in the same session there, and its file lands on main beside the operator's edit`, async () => {
      const g = await gitGarden(driver, {
        turns: [
          { text: 'Creating the file.', toolCall: { writeFile: { path: 'hello.txt', content: `hello from ${driver}\n` } } },
          { text: 'I created hello.txt.' },
          { match: REFLECTION_MARK, text: `I learned that ${driver} works in a worktree of its own.` },
        ],
      });
      const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Create hello.txt containing a greeting.' });
      await cycleUntilIdle(g);
      const runId = `${goal.id}-r1`;
      const run = await readRun(g.paths, runId);
      expect(run).toMatchObject({ status: 'success', worktree: { branch: `pak2/${runId}`, base_branch: 'main' }, reflection: `I learned that ${driver} works in a worktree of its own.` });
      const stream = fs.readFileSync(path.join(g.paths.runsDir, runId, 'events.jsonl'), 'utf8');
      if (driver === 'claude') {
        // The reflection resumed the same session from the same directory: claude's init line names it twice.
        const inits = stream.split('\n').filter((l) => l.includes('"subtype":"init"')).map((l) => JSON.parse(l) as { cwd: string; session_id: string });
        expect(inits.length).toBeGreaterThanOrEqual(2);
        expect(inits.every((i) => i.cwd.endsWith(path.join('.runtime', 'worktrees', runId)))).toBe(true);
        expect(new Set(inits.map((i) => i.session_id)).size).toBe(1);
      }
      expect(await readLanding(g.paths, runId)).toMatchObject({ state: 'landed', files: [{ path: 'hello.txt', status: 'A' }] });
      expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
      expect(git(g.paths.gardenRoot, 'show', 'main:hello.txt')).toBe(`hello from ${driver}`);
      expect(fs.readFileSync(path.join(g.paths.gardenRoot, 'hello.txt'), 'utf8')).toBe(`hello from ${driver}\n`);
      expect(fs.readFileSync(path.join(g.paths.gardenRoot, 'notes.txt'), 'utf8')).toBe('committed\noperator edit, not committed\n');
      expect(fs.existsSync(run.worktree!.path)).toBe(false);
    });
  }
});
