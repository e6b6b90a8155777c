import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { commissionPlant } from '../../source/store/index.js';

/** The scripted agent used through the `command` driver. */
export const FAKE_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/fake-agent.mjs');

const SCENARIOS = ['success', 'big-line', 'no-reflection', 'plain', 'zero', 'exit3', 'error-result', 'stall', 'chatty-stall', 'orphan', 'reflection-stall'];

/** A temp garden (in `options.root`, an empty directory, when given) with a gardener plant and one `[drivers.<scenario>]` per fake-agent scenario. */
export async function makeTestGarden(options: { coordinator?: Record<string, number>; extraToml?: string; files?: Record<string, string>; root?: string } = {}): Promise<Garden & { cleanup: () => void }> {
  const root = options.root ?? fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-test-'));
  const coordinator = { interval_seconds: 3600, watchdog_seconds: 300, run_timeout_seconds: 600, ...options.coordinator };
  const toml = [
    '[runtime]',
    'root = ".runtime"',
    '[defaults]',
    'driver = "success"',
    '[coordinator]',
    ...Object.entries(coordinator).map(([k, v]) => `${k} = ${v}`),
    ...SCENARIOS.map((s) => `[drivers.${s}]\ncommand = ${JSON.stringify([process.execPath, FAKE_AGENT, s])}`),
    options.extraToml ?? '',
  ].join('\n');
  const files: Record<string, string> = {
    'PAK2.toml': toml,
    'MOTIVATION.md': '# Motivation\n\nTest garden.\n',
    'seeds/gardener.md': '# Seed: gardener\n\nYou look after the test garden.\n',
    ...options.files,
  };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  return { ...garden, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) };
}

/** Reads the coordinator event log as records. */
export function readEventLog(garden: Garden): Array<Record<string, string>> {
  try {
    return fs
      .readFileSync(garden.paths.coordinatorLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, string>);
  } catch {
    return [];
  }
}

/** True while a process with this pid exists (and is not a zombie). */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/** Polls `check` every 20 ms until it returns true or `timeoutMs` passes. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}
