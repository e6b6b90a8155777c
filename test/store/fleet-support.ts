/**
 * A fleet on one PostgreSQL garden (issue 27, "Many processes, one garden"):
 * checkouts of the same garden (each its own directory, as each machine
 * has its own), every one pointing `[store] url` at one database; real
 * `pak2 serve`, `pak2 cycle --no-ui` and `pak2 runner` processes on them;
 * an SSE reader that can move from one server to another.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { FAKE_AGENT } from '../support/garden.js';
import { startCli } from '../support/cli.js';
import { until } from '../server/support.js';

/** PAK2.toml of a fleet checkout: the fake agent as driver `success`, the store, short leases. */
export function fleetToml(url: string, options: { maxRuns?: number; ttl?: number } = {}): string {
  return [
    '[runtime]',
    'root = ".runtime"',
    '[defaults]',
    'driver = "success"',
    '[coordinator]',
    'interval_seconds = 2',
    'watchdog_seconds = 300',
    'run_timeout_seconds = 600',
    `max_concurrent_runs = ${options.maxRuns ?? 3}`,
    '[drivers.success]',
    `command = ${JSON.stringify([process.execPath, FAKE_AGENT, 'success'])}`,
    '[runners]',
    `lease_ttl_seconds = ${options.ttl ?? 5}`,
    '[store]',
    `url = ${JSON.stringify(url)}`,
    '',
  ].join('\n');
}

/** A new checkout: PAK2.toml, MOTIVATION.md, the gardener's seed and plant directory (authored files), no runtime. */
export function makeCheckout(url: string, options: { maxRuns?: number; ttl?: number; plantsFrom?: string } = {}): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-fleet-'));
  fs.writeFileSync(path.join(root, 'PAK2.toml'), fleetToml(url, options));
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# Motivation\n\nA fleet garden.\n');
  fs.mkdirSync(path.join(root, 'seeds'), { recursive: true });
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed: gardener\n\nYou look after the fleet garden.\n');
  if (options.plantsFrom) fs.cpSync(path.join(options.plantsFrom, 'plants'), path.join(root, 'plants'), { recursive: true });
  return root;
}

/** A started process and what it printed. */
export interface FleetProcess {
  name: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

function track(name: string, child: ChildProcess): FleetProcess {
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { name, child, output: () => output, exited };
}

/** `pak2 serve` on a checkout (port 0): its URL and token once it serves. */
export async function startServe(root: string, name: string, env: NodeJS.ProcessEnv = {}): Promise<FleetProcess & { url: string; token: string; tokenFile: string }> {
  const p = track(name, startCli(['serve', '--garden', root, '--port', '0'], { env }));
  await until(() => /pak2: serving (\S+)/.test(p.output()) || p.child.exitCode !== null, 30_000, `${name} serving`);
  const url = /pak2: serving (\S+)/.exec(p.output())?.[1];
  if (!url) throw new Error(`${name} did not start: ${p.output()}`);
  const tokenFile = path.join(root, '.runtime', 'serve', 'token');
  return { ...p, url, tokenFile, token: fs.readFileSync(tokenFile, 'utf8').trim() };
}

/** `pak2 cycle --no-ui --json` on a checkout. */
export function startCycle(root: string, name: string, env: NodeJS.ProcessEnv = {}): FleetProcess {
  return track(name, startCli(['cycle', '--no-ui', '--json', '--garden', root], { env }));
}

/** `pak2 runner` against a server, with the fake agent as `success` in its work directory. */
export function startFleetRunner(server: { url: string; tokenFile: string }, name: string): FleetProcess & { dirs: string[] } {
  const workdir = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-fleet-${name}-work-`));
  const state = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-fleet-${name}-state-`));
  fs.writeFileSync(path.join(workdir, 'PAK2.toml'), `[drivers.success]\ncommand = ${JSON.stringify([process.execPath, FAKE_AGENT, 'success'])}\n`);
  const p = track(name, startCli(['runner', '--server', server.url, '--token-file', server.tokenFile, '--name', name, '--workdir', workdir, '--state', state, '--poll', '1'], { cwd: workdir }));
  return { ...p, dirs: [workdir, state] };
}

/** Stops a process: SIGTERM, SIGKILL after 10 s. */
export async function stopProcess(p: FleetProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await p.exited;
  clearTimeout(timer);
}

/** One query on the garden's database. */
export async function sql<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** An SSE reader of `/events/stream` that records every event id it receives, and can move to another server with Last-Event-ID. */
export class SseReader {
  readonly ids: string[] = [];
  private controller: AbortController | undefined;
  private reading: Promise<void> | undefined;

  /** Connects to `server` (from the start of the log when there is no last id yet, `?since=` the first id given). */
  connect(server: { url: string; token: string }, since?: string): void {
    this.controller = new AbortController();
    const last = this.ids.at(-1) ?? since;
    const headers: Record<string, string> = { authorization: `Bearer ${server.token}`, accept: 'text/event-stream' };
    if (last) headers['last-event-id'] = last;
    const signal = this.controller.signal;
    this.reading = (async () => {
      const response = await fetch(`${server.url}/events/stream${last ? '' : `?since=${'0'.repeat(26)}`}`, { headers, signal });
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (.+)$/m.exec(frame)?.[1];
          if (id && /^data: /m.test(frame)) this.ids.push(id);
        }
      }
    })().catch(() => undefined);
  }

  /** Drops the connection (as a client whose network went away). */
  async disconnect(): Promise<void> {
    this.controller?.abort();
    await this.reading;
  }
}
