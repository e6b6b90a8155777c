/**
 * The workbench in a real terminal (tmux) on hostile data and terminal
 * details: a run whose events.jsonl holds a 200 KB line without a space and
 * a 100 KB line of CJK and emoji, a goal whose body is 10 MB, a ⚠ (one
 * column in the terminal), and a terminal that shrinks.
 *
 * Waits are bounded and assert outcomes (what the screen shows, that the
 * program exited), never durations.
 *
 * PAK2_SHOW_SCREENS=1 prints the screens the tests read.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_BIN } from '../support/agent-clis.js';
import { cleanupsAfterEach, goalRows, linesOf, PAK2_BIN, processesWith, ROOT, show, statusLine, TmuxSession } from './tmux.js';

const FAKE_AGENT = path.join(ROOT, 'test', 'fixtures', 'fake-agent.mjs');

const cleanups = cleanupsAfterEach();

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));
  return dir;
}

function session(): TmuxSession {
  const tmux = new TmuxSession();
  cleanups.push(() => tmux.kill());
  return tmux;
}

function pak2(args: string[], cwd: string, env: NodeJS.ProcessEnv): string {
  return execFileSync(process.execPath, [PAK2_BIN, ...args], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function terminalEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8', SHELL: process.env.SHELL ?? '/bin/sh', ...extra };
}

/** A garden after genesis whose default driver is the `command` driver running `argv`. */
function commandGarden(base: string, env: Record<string, string>, argv: string[]): string {
  const gardenDir = path.join(base, 'garden');
  pak2(['init', gardenDir, '--driver', 'command'], base, env);
  const config = path.join(gardenDir, 'PAK2.toml');
  fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace(/^# command = .*$/m, `command = ${JSON.stringify(argv)}`));
  pak2(['genesis'], gardenDir, env);
  return gardenDir;
}

/** An agent whose answer is a 200 KB line without a space, then 100 KB of CJK, emoji and ⚠ without a space. */
const FLOODING_AGENT = `
import fs from 'node:fs';
fs.readFileSync(0, 'utf8');
const say = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
if (process.env.PAK2_PHASE === 'reflection') {
  say({ type: 'result', status: 'success', text: 'ok', cost_usd: 0.001 });
} else {
  say({ type: 'text', text: 'x'.repeat(200000) });
  say({ type: 'text', text: '調査😀⚠'.repeat(20000) });
  say({ type: 'result', status: 'success', text: 'done', cost_usd: 0.02 });
}
`;

/**
 * A garden whose first goal ran on the flooding agent (headless, before the
 * workbench opens) and whose goal record was then given a 10 MB body of
 * long words, CJK and emoji, as a hostile edit would.
 */
function hostileGarden(env: Record<string, string>): string {
  const base = tempDir('pak2-tmux-hostile-');
  const agent = path.join(base, 'flooding-agent.mjs');
  fs.writeFileSync(agent, FLOODING_AGENT);
  const gardenDir = commandGarden(base, env, [process.execPath, agent]);
  pak2(['cycle', '--no-ui', '--until-idle'], gardenDir, { ...env, CI: '1' });
  const events = fs.readFileSync(path.join(gardenDir, '.runtime', 'runs', '1-survey-the-garden-r1', 'events.jsonl'), 'utf8');
  expect(events.split('\n').some((line) => line.length > 200_000)).toBe(true);
  const file = path.join(gardenDir, '.runtime', 'goals', '1-survey-the-garden.json');
  const record = JSON.parse(fs.readFileSync(file, 'utf8')) as { status: string; body: string };
  expect(record.status).toBe('closed');
  const unit = `調査😀⚠${'y'.repeat(200)} `;
  record.body = `Hostile body\n${'z'.repeat(150_000)}\n${unit.repeat(Math.ceil((10 * 1024 * 1024) / Buffer.byteLength(unit)))}`;
  fs.writeFileSync(file, JSON.stringify(record, null, 2));
  expect(fs.statSync(file).size).toBeGreaterThan(10 * 1024 * 1024);
  return gardenDir;
}

/** The workbench of `gardenDir` in tmux at 120×36, once its goal shows closed:success. */
async function openWorkbench(gardenDir: string, env: Record<string, string>): Promise<TmuxSession> {
  const tmux = session();
  tmux.start({ cwd: gardenDir, env, argv: [process.execPath, PAK2_BIN], columns: 120, rows: 36 });
  const screen = await tmux.waitFor('the goal closed:success', (s) => goalRows(s).some((r) => r.id === '1-survey-the-garden' && r.status === 'closed:success') && s, 20_000);
  show('the workbench on hostile data', screen);
  expect(screen).toContain('調査😀⚠調査😀⚠'); // the 100 KB line, wrapped in the run pane
  return tmux;
}

/** Enter on the goal: its detail, the 10 MB body's first rows. */
async function openDetail(tmux: TmuxSession): Promise<string> {
  tmux.keys('Enter');
  // A closed goal's body comes with the snapshot after the first (the first reads only the closed index).
  const screen = await tmux.waitFor('the goal detail', (s) => s.startsWith('╭─ Goal 1-survey-the-garden ') && /^│ Body\s+│$/m.test(s) && s.includes('Hostile body') && s, 15_000);
  show('the 10 MB detail', screen);
  const lines = screen.split('\n');
  const body = lines.findIndex((line) => /^│ Body\s+│$/.test(line));
  expect(lines[body + 1]).toMatch(/^│ {3}Hostile body\s+│$/);
  expect(lines[body + 2]).toBe(`│   ${'z'.repeat(114)} │`);
  return screen;
}

describe('the workbench on hostile data and terminal details (tmux)', () => {
  it(
    'a 200 KB run line and a 10 MB goal body: ? opens help, enter the detail, q quits to the shell',
    async () => {
      const env = terminalEnv(tempDir('pak2-tmux-home-'));
      const gardenDir = hostileGarden(env);
      const tmux = await openWorkbench(gardenDir, env);

      tmux.keys('?');
      show('help', await tmux.waitFor('the help', (s) => s.startsWith('╭─ Keys ') && s, 10_000));
      tmux.keys('?');
      await tmux.waitFor('the panes again', (s) => s.startsWith('╭─ Goals ') && s, 10_000);

      await openDetail(tmux);
      tmux.keys('G');
      const end = await tmux.waitFor('the end of the detail', (s) => /│ {3}… [\d,]+ more bytes\s+│/.test(s) && s, 10_000);
      show('the end of the detail', end);

      tmux.keys('q');
      expect(await tmux.exitStatus(20_000)).toBe(0);
      expect(statusLine(tmux.capture())).toBe('[exited 0]'); // the shell again
    },
    90_000,
  );

  it(
    'SIGTERM is answered while the 10 MB detail is open',
    async () => {
      const marker = `pak2-tmux-hostile-${process.pid}-${Date.now()}`;
      const env = terminalEnv(tempDir('pak2-tmux-home-'), { PAK2_TMUX_TEST: marker });
      const gardenDir = hostileGarden(env);
      const tmux = await openWorkbench(gardenDir, env);
      await openDetail(tmux);
      const workbench = processesWith(marker).filter((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === process.execPath);
      expect(workbench).toHaveLength(1);
      process.kill(workbench[0]!, 'SIGTERM');
      expect(await tmux.exitStatus(20_000)).toBe(0);
      await tmux.closeShell();
      expect(processesWith(marker)).toEqual([]);
    },
    90_000,
  );

  it(
    '⚠ takes one column where the terminal draws it; shrinking keeps the frame within rows - 1 and the scrollback',
    async () => {
      const base = tempDir('pak2-tmux-details-');
      const env = terminalEnv(tempDir('pak2-tmux-home-'));
      const gardenDir = commandGarden(base, env, [process.execPath, FAKE_AGENT, 'success']);
      fs.mkdirSync(path.join(gardenDir, 'plants', 'gardener', 'memory'), { recursive: true });
      fs.writeFileSync(path.join(gardenDir, 'plants', 'gardener', 'memory', 'MEMORY.md'), '# Memory\n\n⚠ the date test fails around midnight UTC on the first of each month\n');

      // Lines the operator had on the screen before: they must survive in the scrollback.
      const tmux = session();
      tmux.start({ cwd: gardenDir, env, argv: ['/bin/sh', '-c', 'seq -f "before pak2 %g" 1 120; exec "$@"', 'sh', process.execPath, PAK2_BIN], columns: 100, rows: 30 });
      let screen = await tmux.waitFor('the gardener goal closed', (s) => goalRows(s).some((r) => r.status === 'closed:success') && s.includes('⚠') && s, 30_000);
      show('⚠ in the plants pane', screen);

      // The plants pane (the left third, 33 columns): its row with ⚠ is cut with … right before its border,
      // and the terminal put that border where Ink did: ⚠ is one column for both.
      const row = screen.split('\n').find((line) => line.includes('⚠ the date test'))!;
      expect(row.slice(0, 33)).toMatch(/^│ {3}⚠ the date test fails aro\S*… │$/);
      expect(row.slice(0, 33).indexOf('… │')).toBe(30); // a ⚠ counted two columns cut it at 29
      expect([...row]).toHaveLength(100);

      const history = () => tmux.tmux('capture-pane', '-p', '-S', '-', '-E', '-1', '-t', tmux.target).split('\n');
      const before = Array.from({ length: 120 }, (_, i) => `before pak2 ${i + 1}`);
      expect(history().slice(0, 120)).toEqual(before);

      /** The frame within `rows - 1` rows of `columns`: borders intact, the status line last, never blank. */
      const fits = (columns: number, rows: number) => (s: string) => {
        const lines = linesOf(s);
        if (lines.length > rows - 1 || !/^● coordinator idle · 0 live/.test(lines.at(-1) ?? '')) return false;
        if (rows < 5) return lines.length === 1 && s;
        if (!lines[0]!.startsWith('╭─ Goals ')) return false;
        // Every character on screen is one column wide (⚠ included): code points are columns.
        return lines.slice(0, -1).every((line) => [...line].length === columns && /[╮│╯]$/.test(line)) && s;
      };
      for (const [columns, rows] of [
        [100, 20],
        [100, 12],
        [100, 8],
        [100, 6],
        [100, 4],
        [100, 30],
        [80, 9],
      ] as const) {
        tmux.resize(columns, rows);
        expect(tmux.size()).toEqual({ columns, rows });
        screen = await tmux.waitFor(`the frame at ${columns}x${rows}`, fits(columns, rows), 10_000);
        show(`${columns}x${rows}`, screen);
      }

      // A pane split below shrinks the workbench's pane (resize-pane's case); closing it grows it back.
      tmux.resize(100, 30);
      await tmux.waitFor('the frame at 100x30', fits(100, 30), 10_000);
      tmux.tmux('split-window', '-v', '-l', '10', '-t', tmux.target, 'sleep 600');
      const split = tmux.size();
      expect(split.rows).toBeLessThan(30);
      show('split', await tmux.waitFor(`the frame in a ${split.rows}-row pane`, fits(100, split.rows), 10_000));
      tmux.tmux('resize-pane', '-t', tmux.target, '-y', '12');
      expect(tmux.size().rows).toBe(12);
      show('resize-pane', await tmux.waitFor('the frame in a 12-row pane', fits(100, 12), 10_000));
      tmux.tmux('kill-pane', '-t', 'wb:0.1');
      expect(tmux.size().rows).toBe(30);
      await tmux.waitFor('the frame at 100x30 again', fits(100, 30), 10_000);

      // The scrollback was never erased: the lines from before pak2 are still there, in order.
      expect(history().slice(0, 120)).toEqual(before);

      tmux.keys('q');
      expect(await tmux.exitStatus(20_000)).toBe(0);
    },
    120_000,
  );
});
