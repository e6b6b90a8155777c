/**
 * The workbench driven as a person drives it: `pak2` in a real terminal
 * (a detached tmux session on a private socket), keys sent with
 * `tmux send-keys`, the screen read with `tmux capture-pane`. The agent is
 * the real Claude Code CLI against pak2's scripted model server.
 *
 * PAK2_SHOW_SCREENS=1 prints the screens the tests read.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { cleanupsAfterEach, goalRows, linesOf, PAK2_BIN, processesWith, ROOT, show, showsId, statusLine, TmuxSession, widthOf } from './tmux.js';

const FAKE_AGENT = path.join(ROOT, 'test', 'fixtures', 'fake-agent.mjs');
const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);
const BODY = 'Create hello.txt with a greeting';
const REFLECTION = 'I learned that the garden root is the working directory.';
/** A body of double-width characters that has to wrap in a narrow detail view. */
const WIDE_BODY = '調査: 日付のテストが月初めの深夜にだけ失敗する理由を調べて、修正案を三つ書いてください。';

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

/** `node bin/pak2.js ...` to completion; its stdout. */
function pak2(args: string[], cwd: string, env: NodeJS.ProcessEnv): string {
  return execFileSync(process.execPath, [PAK2_BIN, ...args], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** What a person's terminal would hand pak2: PATH with the agent CLIs' bin first, HOME, TERM, a UTF-8 locale; no CI. */
function terminalEnv(home: string, extra: Record<string, string>): Record<string, string> {
  return {
    PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    TERM: 'xterm-256color',
    LANG: 'C.UTF-8',
    SHELL: process.env.SHELL ?? '/bin/sh',
    ...extra,
  };
}

/** The selected row of the Goals pane (index among its rows), read from the inverse video of a `capture-pane -e`. */
function selectedGoalRow(tmux: TmuxSession): number | undefined {
  const lines = tmux.capture({ escapes: true }).split('\n');
  const top = lines.findIndex((line) => line.includes('Goals'));
  for (let i = top + 2; i < lines.length; i++) {
    const text = lines[i]!.replace(/\x1b\[[0-9;:]*m/g, '');
    if (!text.startsWith('│ ')) break;
    const inverse = [...lines[i]!.matchAll(/\x1b\[([0-9;:]*)m/g)].some((m) => sgrHasInverse(m[1]!));
    if (inverse) return i - top - 2;
  }
  return undefined;
}

/** Whether SGR parameters turn on reverse video (7), skipping extended colour arguments (38;5;n, 38;2;r;g;b). */
function sgrHasInverse(params: string): boolean {
  const codes = params.split(';').map(Number);
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i]!;
    if (code === 38 || code === 48 || code === 58) i += codes[i + 1] === 5 ? 2 : codes[i + 1] === 2 ? 4 : 0;
    else if (code === 7) return true;
  }
  return false;
}

/**
 * A pane's top border whose title is wider than the pane: `Pane` cuts the
 * whole border with `…`, losing the `╮` corner (the Run pane's title at 80
 * columns with a long run id). Tolerated here, reported as a UI bug.
 */
function cutTitle(line: string): boolean {
  return line.startsWith('╭─ ') && /─╮╭─ Run \S+…$/.test(line);
}

/** A garden whose default driver is the scripted fake agent (`command` driver) in `scenario`, after genesis. */
function commandGarden(base: string, env: Record<string, string>, scenario: string): string {
  const gardenDir = path.join(base, 'garden');
  pak2(['init', gardenDir, '--driver', 'command'], base, env);
  const config = path.join(gardenDir, 'PAK2.toml');
  fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace(/^# command = .*$/m, `command = ${JSON.stringify([process.execPath, FAKE_AGENT, scenario])}`));
  pak2(['genesis'], gardenDir, env);
  return gardenDir;
}

describe('the workbench in a real terminal (tmux)', () => {
  it(
    'runs the gardener goal on open, takes a goal from the form, runs it on claude, shows its detail, quits cleanly',
    async () => {
      // The scripted model: the gardener's survey writes its memory; the form's goal writes hello.txt; both reflect.
      const server: ModelServer = await startModelServer({
        turns: [
          { text: 'Recording what I found.', toolCall: { writeFile: { path: 'plants/gardener/memory/MEMORY.md', content: '# Gardener memory\n\n- A tmux test garden.\n' } } },
          { text: 'Surveyed the garden.' },
          { match: REFLECTION_MARK, text: REFLECTION },
          { match: BODY, text: 'Creating hello.txt.', toolCall: { writeFile: { path: 'hello.txt', content: 'hello from the workbench\n' } } },
          { text: 'I created hello.txt.' },
        ],
      });
      cleanups.push(() => server.close());

      const base = tempDir('pak2-tmux-');
      const stateDir = tempDir('pak2-tmux-claude-');
      const home = tempDir('pak2-tmux-home-');
      const gardenDir = path.join(base, 'garden');
      const env = terminalEnv(home, {
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: 'test',
        CLAUDE_CONFIG_DIR: stateDir,
        CLAUDE_CODE_MAX_RETRIES: '0',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
      });
      pak2(['init', gardenDir, '--driver', 'claude'], base, env);
      expect(pak2(['genesis'], gardenDir, env)).toContain('queued goal 1-survey-the-garden');

      const tmux = session();
      tmux.start({ cwd: gardenDir, env, argv: [process.execPath, PAK2_BIN], columns: 120, rows: 36 });

      // The workbench opens and runs the gardener's first goal straight away.
      let screen = await tmux.waitFor('the gardener goal closed success', (s) => goalRows(s).some((r) => r.id === '1-survey-the-garden' && r.status === 'closed:success') && s, 60_000);
      show('the first goal done', screen);
      expect(screen).toMatch(/^╭─ Goals /);
      expect(statusLine(screen)).toMatch(/^● coordinator \w+ · \d+ live · \d+ queued · \$\d+\.\d{4} today · garden/);
      expect(fs.existsSync(path.join(gardenDir, 'plants/gardener/memory/MEMORY.md'))).toBe(true);

      // n: the form, the cursor on the body; type; ctrl-s.
      tmux.keys('n');
      screen = await tmux.waitFor('the goal form', (s) => s.includes('─ New goal ') && s);
      show('the empty form', screen);
      tmux.type(BODY);
      screen = await tmux.waitFor('the typed body', (s) => s.includes(BODY) && s);
      show('the filled form', screen);
      tmux.keys('C-s');
      // The status line names the new goal and follows it: queued, then (a fast run, a slow capture) running or closed.
      const [id, queued] = await tmux.waitFor('<status> <id> on the status line', (s) => {
        const found = /^(?:queued|dispatched|running|closed:\S+) (\S+) │/.exec(statusLine(s))?.[1];
        return found ? ([found, s] as const) : undefined;
      });
      show('after ctrl-s', queued);
      expect(id).toMatch(/^2-/);
      expect(queued).toMatch(/^╭─ Goals /);

      // It runs on the real claude CLI against the scripted server.
      screen = await tmux.waitFor(`${id} closed success`, (s) => goalRows(s).some((r) => showsId(r.id, id) && r.status === 'closed:success') && s, 60_000);
      show('the new goal done', screen);
      expect(fs.readFileSync(path.join(gardenDir, 'hello.txt'), 'utf8')).toBe('hello from the workbench\n');

      // Select it (j / k from where the cursor is), enter: the detail.
      const rows = goalRows(screen);
      const target = rows.findIndex((r) => showsId(r.id, id));
      expect(rows.slice(0, target).every((r) => !r.status.startsWith('closed:'))).toBe(true); // the top of the closed ones
      for (let moves = 0; moves < 20; moves++) {
        const at = selectedGoalRow(tmux);
        expect(at, 'a selected row in the Goals pane').toBeDefined();
        if (at === target) break;
        tmux.keys(at! < target ? 'j' : 'k');
        await tmux.waitFor('the cursor to move', () => selectedGoalRow(tmux) !== at, 5_000);
      }
      expect(selectedGoalRow(tmux)).toBe(target);
      tmux.keys('Enter');
      screen = await tmux.waitFor('the goal detail', (s) => s.includes(`─ Goal ${id} `) && s.includes('Reflection') && s);
      show('the detail', screen);
      const runId = /^│ Run (\S+)/m.exec(screen)?.[1];
      expect(runId).toBe(`${id}-r1`);
      const meta = JSON.parse(fs.readFileSync(path.join(gardenDir, '.runtime', 'runs', runId!, 'meta.json'), 'utf8')) as { status: string; cost: { usd: number; source: string } };
      expect(meta.status).toBe('success');
      expect(meta.cost.source).toBe('provider');
      expect(meta.cost.usd).toBeGreaterThan(0);
      expect(screen).toContain(`cost $${meta.cost.usd.toFixed(4)} (provider)`);
      const lines = screen.split('\n');
      const heading = lines.findIndex((line) => /^│ Reflection\s+│$/.test(line));
      expect(heading).toBeGreaterThan(0);
      expect(lines[heading + 1]).toMatch(new RegExp(`^│   ${REFLECTION.replace(/\./g, '\\.')}\\s+│$`));
      expect(screen).toContain(BODY);

      // Escape alone (ESC followed by a key reads as Meta): back to the panes, then q.
      tmux.keys('Escape');
      screen = await tmux.waitFor('the panes again', (s) => s.startsWith('╭─ Goals ') && s);
      tmux.keys('q');
      expect(await tmux.exitStatus()).toBe(0);
      show('after q', tmux.capture());
      expect(tmux.format('#{cursor_flag}'), 'the cursor shown again').toBe('1');
      await tmux.closeShell();
      expect(processesWith(stateDir)).toEqual([]);
    },
    150_000,
  );

  it(
    'keeps its frame inside the window through resizes',
    async () => {
      const base = tempDir('pak2-tmux-resize-');
      const home = tempDir('pak2-tmux-home-');
      const env = terminalEnv(home, {});
      const gardenDir = commandGarden(base, env, 'success');
      pak2(['submit', '--plant', 'gardener', '--type', 'fix', '--priority', '70', '--body', 'Fix the flaky date test in test/date.test.ts, which fails around midnight UTC on the first of each month'], gardenDir, env);
      pak2(['submit', '--plant', 'gardener', '--type', 'research', '--body', `${WIDE_BODY}\n\nwide characters in the body 🚀`], gardenDir, env);

      const tmux = session();
      tmux.start({ cwd: gardenDir, env, argv: [process.execPath, PAK2_BIN], columns: 120, rows: 36 });
      const done = (s: string) => {
        const rows = goalRows(s);
        return rows.length === 3 && rows.every((r) => r.status === 'closed:success') && s;
      };
      show('120x36', await tmux.waitFor('three goals closed success', done, 30_000));

      /**
       * Resizes, then waits for the frame redrawn at the new size: `first` on
       * the first row, the status line last, every pane edge at the window's
       * edge; and no line the terminal had to wrap (the joined capture would
       * show it as one line wider than the window).
       */
      const resizeAndCheck = async (columns: number, rows: number, first: string, label: string) => {
        tmux.resize(columns, rows);
        expect(tmux.size()).toEqual({ columns, rows });
        const fits = (s: string) => {
          const lines = s.split('\n');
          if (!lines[0]!.startsWith(first) || !/^● coordinator idle · 0 live · 0 queued/.test(lines[rows - 2] ?? '')) return false;
          return lines.slice(0, rows - 2).every((line) => widthOf(line) === columns && (/[╮│╯]$/.test(line) || cutTitle(line))) && s;
        };
        const screen = await tmux.waitFor(`${label} at ${columns}x${rows}`, fits, 10_000);
        show(`${label} ${columns}x${rows}`, screen);
        const joined = linesOf(tmux.capture({ joined: true }));
        for (const line of joined) expect(widthOf(line), line).toBeLessThanOrEqual(columns);
        expect(joined.length).toBeLessThanOrEqual(rows);
        return screen;
      };

      for (const [columns, rows] of [
        [80, 24],
        [250, 70],
        [60, 16],
        [120, 36],
      ] as const) {
        const screen = await resizeAndCheck(columns, rows, '╭─ Goals ', 'the panes');
        expect(goalRows(screen)).toHaveLength(3);
      }

      // The detail of the goal with wide characters (the first row: closed last), through resizes.
      expect(goalRows(tmux.capture())[0]!.id).toMatch(/^3-/);
      tmux.keys('Enter');
      await tmux.waitFor('the detail', (s) => s.startsWith('╭─ Goal 3-'));
      for (const [columns, rows] of [
        [80, 24],
        [44, 30],
        [120, 36],
      ] as const) {
        const screen = await resizeAndCheck(columns, rows, '╭─ Goal 3-', 'the detail');
        // The body wraps inside the pane; none of it is lost.
        const body = screen.split('\n').slice(screen.split('\n').findIndex((line) => /^│ Body\s/.test(line)) + 1);
        const text = body.slice(0, body.findIndex((line) => /^│\s+│$/.test(line))).map((line) => line.slice(1, -1).trim()).join('');
        expect(text.replace(/\s+/g, '')).toBe(WIDE_BODY.replace(/\s+/g, ''));
      }
      tmux.keys('Escape');
      await tmux.waitFor('the panes again', (s) => s.startsWith('╭─ Goals '));

      tmux.keys('q');
      expect(await tmux.exitStatus()).toBe(0);
    },
    90_000,
  );

  it(
    'a tiny terminal keeps the frame whole: 30×8 and smaller, started there and resized to (issue 28)',
    async () => {
      const base = tempDir('pak2-tmux-tiny-');
      const home = tempDir('pak2-tmux-home-');
      const env = terminalEnv(home, {});
      const gardenDir = commandGarden(base, env, 'success');
      const tmux = session();
      tmux.start({ cwd: gardenDir, env, argv: [process.execPath, PAK2_BIN], columns: 30, rows: 8 });
      /** The frame at `columns`×`rows`: the goals pane's top border on the first row, the status line above the free last row, no line wrapped. */
      const whole = async (columns: number, rows: number) => {
        const fits = (s: string) => {
          const lines = s.split('\n');
          return /^╭─ G[^╭╮]*╮/.test(lines[0]!) && /^● coord/.test(lines[rows - 2] ?? '') && lines.every((line) => widthOf(line) <= columns) && s;
        };
        const screen = await tmux.waitFor(`the frame at ${columns}x${rows}`, fits, 15_000);
        show(`tiny ${columns}x${rows}`, screen);
        const joined = linesOf(tmux.capture({ joined: true }));
        for (const line of joined) expect(widthOf(line), line).toBeLessThanOrEqual(columns);
        expect(joined.length).toBeLessThanOrEqual(rows);
        return screen;
      };
      const first = await whole(30, 8);
      expect(first.split('\n').slice(0, 6).every((line) => /^[╭│╰]/.test(line) && /[╮│╯]$/.test(line))).toBe(true);
      for (const [columns, rows] of [
        [20, 8],
        [35, 10],
        [40, 8],
        [12, 6],
        [30, 8],
      ] as const) {
        tmux.resize(columns, rows);
        await whole(columns, rows);
      }
      tmux.keys('q');
      expect(await tmux.exitStatus()).toBe(0);
    },
    60_000,
  );

  it(
    'asks before quitting while a run is live: n stays, y stops the run and exits',
    async () => {
      const base = tempDir('pak2-tmux-quit-');
      const home = tempDir('pak2-tmux-home-');
      const marker = `pak2-tmux-quit-${process.pid}-${Date.now()}`;
      const env = terminalEnv(home, { PAK2_TMUX_TEST: marker });
      const gardenDir = commandGarden(base, env, 'chatty-stall'); // talks every 200 ms, never finishes

      const tmux = session();
      tmux.start({ cwd: gardenDir, env, argv: [process.execPath, PAK2_BIN], columns: 100, rows: 30 });
      let screen = await tmux.waitFor('the gardener goal running', (s) => goalRows(s).some((r) => r.id === '1-survey-the-garden' && r.status === 'running') && s.includes('still working') && s);
      expect(statusLine(screen)).toMatch(/^● coordinator running · 1 live · 0 queued/);
      const commandOf = (pid: number) => {
        try {
          return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
        } catch {
          return '';
        }
      };
      expect(processesWith(marker).map(commandOf).filter((c) => c.includes('fake-agent.mjs'))).toHaveLength(1);

      tmux.keys('q');
      screen = await tmux.waitFor('the quit question', (s) => s.includes('─ Quit? ') && s);
      show('q with a live run', screen);
      expect(screen).toContain('1 run is live: 1-survey-the-garden-r1');
      expect(screen).toMatch(/^│ Quit now\? y \/ n\s+│$/m);
      tmux.keys('n');
      await tmux.waitFor('the panes again', (s) => s.startsWith('╭─ Goals ') && !s.includes('─ Quit? '));
      expect(tmux.exited()).toBe(false);

      tmux.keys('q');
      await tmux.waitFor('the quit question again', (s) => s.includes('─ Quit? '));
      tmux.keys('y');
      expect(await tmux.exitStatus()).toBe(0);
      show('after y', tmux.capture());
      expect(tmux.format('#{cursor_flag}'), 'the cursor shown again').toBe('1');
      await tmux.closeShell();
      expect(processesWith(marker)).toEqual([]);
      const meta = JSON.parse(fs.readFileSync(path.join(gardenDir, '.runtime', 'runs', '1-survey-the-garden-r1', 'meta.json'), 'utf8')) as { status: string; failure_reason?: string };
      expect(meta).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    },
    60_000,
  );
});
