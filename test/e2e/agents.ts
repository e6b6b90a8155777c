import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Coordinator } from '../../source/coordinator/index.js';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { commissionPlant } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { isAlive, readEventLog } from '../support/garden.js';

/** A temp garden for a real agent CLI, with its own isolated CLI state directory. */
export interface AgentGarden extends Garden {
  /** CLAUDE_CONFIG_DIR or CODEX_HOME: unique per test, so its processes can be found. */
  stateDir: string;
  env: NodeJS.ProcessEnv;
  cleanup: () => void;
}

/** Builds a split-root garden whose default driver is `driver`, with a gardener plant. */
export async function makeAgentGarden(driver: 'claude' | 'codex', coordinator: Record<string, number | string>, env: (stateDir: string) => NodeJS.ProcessEnv, model?: string): Promise<AgentGarden> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-e2e-${driver}-`));
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-e2e-${driver}-state-`));
  const toml = [
    '[runtime]',
    'root = ".runtime"',
    '[defaults]',
    `driver = "${driver}"`,
    ...(model ? [`model = "${model}"`] : []),
    '[coordinator]',
    ...Object.entries({ interval_seconds: 3600, watchdog_seconds: 120, run_timeout_seconds: 180, ...coordinator }).map(([k, v]) => `${k} = ${JSON.stringify(v)}`),
  ].join('\n');
  fs.writeFileSync(path.join(root, 'PAK2.toml'), `${toml}\n`);
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# Motivation\n\nAn end-to-end test garden.\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed: gardener\n\nYou look after this test garden.\n');
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  return {
    ...garden,
    stateDir,
    env: { ...process.env, PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? ''}`, ...env(stateDir) },
    cleanup: () => {
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** Runs the in-process coordinator until the garden is idle, then stops it. */
export async function cycleUntilIdle(garden: AgentGarden): Promise<void> {
  const coordinator = new Coordinator({ garden, env: garden.env, onStderr: () => undefined });
  await coordinator.start();
  try {
    await coordinator.untilIdle();
  } finally {
    await coordinator.stop();
  }
}

/**
 * Pids of live processes whose environment mentions `marker` (the test's
 * private CLI state directory): any agent process, or a child of one, that
 * outlived its run.
 */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${name}/environ`, 'utf8');
      if (environ.includes(marker) && isAlive(Number(name))) found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** Parsed lines of a run's events.jsonl. */
export function streamOf(garden: Garden, runId: string): Array<Record<string, unknown>> {
  return fs
    .readFileSync(path.join(garden.paths.runsDir, runId, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The coordinator events of one successful reflecting goal, in order (docs/events/level2.md). */
export const SUCCESSFUL_GOAL_EVENTS = [
  'GoalSubmitted',
  'GoalTransitioned',
  'RunStarted',
  'GoalTransitioned',
  'ReflectionRequested',
  'ReflectionRecorded',
  'RunClosed',
  'GoalTransitioned',
  'GoalTransitioned',
  'GoalClosed',
] as const;

/** The garden's goal and run events, leaving out coordinator and plant bookkeeping. */
export function goalEventTypes(garden: Garden): string[] {
  return readEventLog(garden)
    .map((e) => e.type!)
    .filter((t) => !t.startsWith('Coordinator') && t !== 'PlantCommissioned');
}

/** codex's config.toml for the scripted model server at `url` (its key read from PAK2_TEST_MODEL_KEY; no retries, plugins or analytics). */
export function codexScriptedConfig(url: string): string {
  return [
    'model_provider = "scripted"',
    '[model_providers.scripted]',
    'name = "scripted"',
    `base_url = "${url}/v1"`,
    'wire_api = "responses"',
    'env_key = "PAK2_TEST_MODEL_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '[features]',
    'plugins = false',
    '[analytics]',
    'enabled = false',
    '',
  ].join('\n');
}

/**
 * The environment that points the real claude CLI at the scripted model
 * server at `url`, its state in `stateDir` (no retries, telemetry or
 * updates). HOME is the state directory too: claude's Bash tool snapshots
 * the user's shell, and a login rc that blocks (a pyenv rehash waiting on a
 * lock a killed shell left) would hold every shell command for a minute.
 */
export function claudeScriptedEnv(url: string, stateDir: string): NodeJS.ProcessEnv {
  return {
    HOME: stateDir,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'test-key',
    CLAUDE_CONFIG_DIR: stateDir,
    CLAUDE_CODE_MAX_RETRIES: '0',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}
