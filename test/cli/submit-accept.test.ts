/**
 * `pak2 submit --accept TEXT [--accept-verify CMD]` (docs/goal/level2.md,
 * "Acceptance criteria"): each criterion lands on the goal's
 * `acceptance_criteria` in order, a `--accept-verify` with the `--accept`
 * just before it; a misplaced or empty one is one line naming the flag,
 * exit 2, and no goal.
 */
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden();
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

const submit = ['submit', '--plant', 'gardener', '--type', 'fix', '--body', 'Fix the parser'];
const goalFiles = () => (fs.existsSync(garden.paths.goalsDir) ? fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json')) : []);

describe('pak2 submit --accept', () => {
  it('keeps the criteria in order, each --accept-verify with the --accept before it; pak2 show lists them', async () => {
    const r = await runCli([...submit, ...g, '--accept', 'the parser tests pass', '--accept-verify', 'npm test -- parser', '--accept', 'the docs say what changed', '--json']);
    expect(r.code).toBe(0);
    const goal = JSON.parse(r.stdout) as { id: string; acceptance_criteria: unknown };
    expect(goal.acceptance_criteria).toEqual([{ text: 'the parser tests pass', verify: 'npm test -- parser' }, { text: 'the docs say what changed' }]);
    const shown = await runCli(['show', ...g, goal.id]);
    expect(shown.stdout).toContain('  acceptance criteria:\n    1. the parser tests pass  (verify: npm test -- parser)\n    2. the docs say what changed  (no verify command: reported not verified)');
  });

  it.each([
    [['--accept-verify', 'npm test'], /^pak2: --accept-verify "npm test": give --accept TEXT before it/],
    [['--accept', 'a', '--accept-verify', 'x', '--accept-verify', 'y'], /^pak2: --accept-verify "y": criterion 1 \("a"\) has a command already; one --accept-verify per --accept$/],
    [['--accept', '   '], /^pak2: --accept: criterion 1 is empty$/],
    [['--accept', 'a', '--accept-verify', ' '], /^pak2: --accept-verify: the command of criterion 1 \("a"\) is empty$/],
    [['--accept', 'two\nlines'], /^pak2: --accept: criterion 1 is more than one line/],
  ])('%j is refused in one line naming the flag, exit 2, nothing written', async (args, message) => {
    const r = await runCli([...submit, ...g, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'))).toEqual([expect.stringMatching(message)]);
    expect(goalFiles()).toEqual([]);
  });
});
