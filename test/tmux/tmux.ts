import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import stringWidth from 'string-width';
import { afterEach } from 'vitest';

/** The repository root and bin/pak2.js (runs dist/, which the global setup builds). The real `claude` is in test/support/agent-clis.ts's AGENT_BIN. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PAK2_BIN = path.join(ROOT, 'bin', 'pak2.js');

/** Quotes one word for `sh -c`. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The environment tmux itself runs with: no CI (the workbench turns headless on CI), no outer TMUX, UTF-8. */
function tmuxClientEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', LANG: 'C.UTF-8' };
  delete env.CI;
  delete env.TMUX;
  delete env.TMUX_PANE;
  return env;
}

let sockets = 0;

/**
 * One tmux server on a private socket (`tmux -L <name>`) holding one
 * detached session whose only pane runs a command, driven as a person would:
 * keys in, screen text out.
 */
export class TmuxSession {
  readonly socket = `pak2-test-${process.pid}-${Date.now().toString(36)}-${sockets++}`;
  readonly target = 'wb:0.0';

  /** tmux with its private socket; returns stdout. */
  tmux(...args: string[]): string {
    return execFileSync('tmux', ['-u', '-L', this.socket, ...args], { encoding: 'utf8', env: tmuxClientEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /**
   * Starts the session: `env -i VARS... argv` in `cwd`, at `columns` × `rows`.
   * The pane stays after its process exits (remain-on-exit), so the exit
   * status and the last screen can be read.
   */
  start(options: { cwd: string; env: Record<string, string>; argv: string[]; columns: number; rows: number }): void {
    const vars = Object.entries(options.env).map(([key, value]) => shellQuote(`${key}=${value}`));
    // As from a shell: the program, then its exit status on the screen (`[exited N]`, read by
    // exitStatus()), then the shell waits for a line, so the terminal can be inspected as the
    // program left it (closeShell() ends it).
    const script = '"$@"; echo "[exited $?]"; read line';
    const command = ['exec', 'env', '-i', ...vars, '/bin/sh', '-c', shellQuote(script), 'sh', ...options.argv.map(shellQuote)].join(' ');
    this.tmux('new-session', '-d', '-s', 'wb', '-x', String(options.columns), '-y', String(options.rows), '-c', options.cwd, command, ';', 'set-option', '-t', 'wb', 'remain-on-exit', 'on');
  }

  /** The visible screen as text. `joined` joins lines the terminal wrapped, so a line wider than the window shows as one long line. */
  capture(options: { joined?: boolean; escapes?: boolean } = {}): string {
    const flags = ['-p', ...(options.joined ? ['-J'] : []), ...(options.escapes ? ['-e'] : [])];
    return this.tmux('capture-pane', ...flags, '-t', this.target);
  }

  /** Named keys (`Enter`, `Escape`, `C-s`, `j`), each as it would be pressed. */
  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', this.target, ...keys);
  }

  /** Literal text, typed. */
  type(text: string): void {
    this.tmux('send-keys', '-t', this.target, '-l', text);
  }

  resize(columns: number, rows: number): void {
    this.tmux('resize-window', '-t', 'wb', '-x', String(columns), '-y', String(rows));
  }

  /** A `#{format}` of the pane, e.g. `#{pane_dead}`. */
  format(format: string): string {
    return this.tmux('display-message', '-p', '-t', this.target, format).trim();
  }

  /** Whether the pane's program has exited (the pane stays: remain-on-exit). */
  exited(): boolean {
    try {
      return this.format('#{pane_dead}') === '1';
    } catch {
      return true; // the server is gone
    }
  }

  /** Size of the pane as tmux sees it. */
  size(): { columns: number; rows: number } {
    const [columns, rows] = this.format('#{pane_width} #{pane_height}').split(' ').map(Number);
    return { columns: columns!, rows: rows! };
  }

  /**
   * Polls the screen every 100 ms until `probe` returns something (not
   * undefined / false), then returns it. On timeout, fails with the last
   * screen, so a failure shows what was there.
   */
  async waitFor<T>(what: string, probe: (screen: string) => T | undefined | false, timeoutMs = 30_000, exitOk = false): Promise<T> {
    const end = Date.now() + timeoutMs;
    let screen = '';
    for (;;) {
      try {
        screen = this.capture();
      } catch (error) {
        screen = `(capture failed: ${(error as Error).message})`;
      }
      const found = probe(screen);
      if (found !== undefined && found !== false) return found;
      if (!exitOk && this.exited()) throw new Error(`waiting for ${what}: the program exited (${this.format('status #{pane_dead_status} signal #{pane_dead_signal}')}); the screen:\n${screen}`);
      if (Date.now() > end) throw new Error(`waiting for ${what}: not seen within ${timeoutMs} ms; the screen:\n${screen}`);
      await sleep(100);
    }
  }

  /** Waits until the program has exited; its exit status, as the shell printed it. */
  async exitStatus(timeoutMs = 20_000): Promise<number> {
    return Number(await this.waitFor('the program to exit', (s) => /^\[exited (\d+)\]$/m.exec(s)?.[1], timeoutMs, true));
  }

  /** After exitStatus(): ends the waiting shell; resolves once the pane has no process left. */
  async closeShell(timeoutMs = 10_000): Promise<void> {
    this.keys('Enter');
    const end = Date.now() + timeoutMs;
    while (!this.exited()) {
      if (Date.now() > end) throw new Error(`the pane's shell did not exit within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /**
   * Stops the tmux server and everything in it, waits (up to 10 s) for the
   * pane's processes to be gone, so nothing still writes into the temp
   * directories being removed, and removes the socket.
   */
  async kill(): Promise<void> {
    let socketPath = '';
    let pids: number[] = [];
    try {
      socketPath = this.tmux('display-message', '-p', '#{socket_path}').trim();
      pids = this.tmux('list-panes', '-a', '-F', '#{pane_pid}').split('\n').filter(Boolean).map(Number);
      this.tmux('kill-server');
    } catch {
      // no server (never started, or already gone)
    }
    // Each pane's process leads a session; its programs (pak2, the agents it started) are in it.
    const end = Date.now() + 10_000;
    while (pids.some((pid) => alive(pid) || inSession(pid)) && Date.now() < end) await sleep(50);
    if (socketPath) fs.rmSync(socketPath, { force: true });
  }
}

/** Whether any live process belongs to session `sid`. */
function inSession(sid: number): boolean {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, , , session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z' && Number(session) === sid) return true;
    } catch {
      // gone
    }
  }
  return false;
}

/** Whether a process exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Lines of a capture, trailing blank lines dropped. */
export function linesOf(screen: string): string[] {
  const lines = screen.split('\n');
  while (lines.length && !lines.at(-1)!.trim()) lines.pop();
  return lines;
}

/** The status line: the last non-blank line of the screen. */
export function statusLine(screen: string): string {
  return linesOf(screen).at(-1) ?? '';
}

/** Display width of a captured line. */
export function widthOf(line: string): number {
  return stringWidth(line);
}

/**
 * The rows of the Goals pane (left pane, top): `{ id, status, line }` per goal,
 * top to bottom; `status` is the status column (`queued`, `closed:success`,
 * or a landing's words: `awaiting review`, `landed`). `id` may be cut with `…` when the column is narrow.
 */
export function goalRows(screen: string): { id: string; status: string; line: string }[] {
  const lines = screen.split('\n');
  const top = lines.findIndex((line) => line.startsWith('╭─ Goals '));
  if (top < 0) return [];
  const rows: { id: string; status: string; line: string }[] = [];
  for (const line of lines.slice(top + 2)) {
    if (!line.startsWith('│ ')) break;
    const pane = line.slice(0, line.indexOf('│', 1) + 1);
    const cells = pane.slice(1, -1).trim().split(/\s+/);
    // A goal's status, or its run's landing in words (two words for some: `awaiting review`, `land failed`).
    const status = / (awaiting review|land failed|landing|waiting|landed|conflict|rejected|queued|dispatched|running|completed|blocked|closed:\S+) /.exec(pane)?.[1];
    if (!cells[0] || !status) break;
    rows.push({ id: cells[0], status, line: pane });
  }
  return rows;
}

/** Whether a (possibly cut) id cell shows goal `id`. */
export function showsId(cell: string, id: string): boolean {
  return cell === id || (cell.endsWith('…') && id.startsWith(cell.slice(0, -1)));
}

/** Pids of live processes whose environment mentions `marker`. */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!fs.readFileSync(`/proc/${name}/environ`, 'utf8').includes(marker)) continue;
      if (/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${name}/stat`, 'utf8'))) continue; // a zombie
      found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/**
 * The cleanups of one test file (a tmux session, a garden, a temp home):
 * pushed as a test makes them, run in reverse after each test, each one
 * whatever the others did.
 */
export function cleanupsAfterEach(): Array<() => void | Promise<void>> {
  const cleanups: Array<() => void | Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch {
        // keep cleaning
      }
    }
  });
  return cleanups;
}

/** Prints a captured screen when PAK2_SHOW_SCREENS is set (to look at what a test saw). */
export function show(label: string, screen: string): void {
  if (process.env.PAK2_SHOW_SCREENS) process.stdout.write(`\n--- ${label} ---\n${screen}\n`);
}
