import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { tokenTextHint } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import type { CliIO } from '../main.js';

/** The flags of `pak2 runner` as commander hands them over. */
export interface RunnerFlags {
  server?: string;
  tokenFile?: string;
  name?: string;
  plant: string[];
  driver: string[];
  maxRuns?: string;
  workdir?: string;
  state?: string;
  poll?: string;
}

/** The runner's settings, checked. Times in ms. */
export interface RunnerSettings {
  server: string;
  token: string;
  tokenFile: string;
  name: string;
  plants: string[];
  drivers: string[];
  maxRuns: number | undefined;
  workdir: string;
  stateDir: string;
  pollMs: number;
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const PLANT_PATTERN = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

/**
 * Checks the flags of `pak2 runner` (docs/runners/level2.md) and reads the
 * token file.
 *
 * @throws UserError naming the flag (or the token file) in one line.
 */
export async function runnerSettings(flags: RunnerFlags, io: Pick<CliIO, 'cwd' | 'env'>): Promise<RunnerSettings> {
  const { defaultRunnerName, defaultStateDir } = await import('../../runner/state.js');
  if (!flags.server) throw new UserError('--server: required: the garden server\'s URL, e.g. http://garden-host:7717');
  let url: URL;
  try {
    url = new URL(flags.server);
  } catch {
    throw new UserError(`--server ${flags.server}: not a URL (e.g. http://garden-host:7717)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UserError(`--server ${flags.server}: must be an http:// or https:// URL`);
  if (!flags.tokenFile) throw new UserError("--token-file: required: a file holding the garden's bearer token (its <runtime-root>/serve/token)");
  const tokenFile = path.resolve(io.cwd, flags.tokenFile);
  let token: string;
  try {
    token = fs.readFileSync(tokenFile, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UserError(`--token-file ${tokenFile}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : `cannot read it (${(error as Error).message})`}`);
  }
  if (!token) throw new UserError(`--token-file ${tokenFile}: the file is empty; copy the garden's <runtime-root>/serve/token into it`);
  if (/\s/.test(token)) throw new UserError(`--token-file ${tokenFile}: holds more than one word; it should hold the token alone`);
  // A token of `pak2 token create` says its role and name (a hint; the server decides): a runner token names its runner.
  const hint = tokenTextHint(token);
  if (hint?.role === 'read') throw new UserError(`--token-file ${tokenFile}: holds a read token (${hint.name}); a runner needs a runner token (pak2 token create --role runner --name NAME) or the operator's`);
  if (hint?.role === 'runner' && flags.name !== undefined && flags.name !== hint.name) {
    throw new UserError(`--name ${flags.name}: the token in ${tokenFile} is runner ${hint.name}'s; a runner token names its runner (leave --name out, or give --name ${hint.name})`);
  }
  const name = flags.name ?? (hint?.role === 'runner' ? hint.name : defaultRunnerName());
  if (!NAME_PATTERN.test(name)) throw new UserError(`--name ${name}: letters, digits, '.', '_', '-' only, starting with a letter or digit; at most 64`);
  for (const plant of flags.plant) if (!PLANT_PATTERN.test(plant)) throw new UserError(`--plant ${plant}: not a plant name (lower-case letters, digits, inner hyphens)`);
  for (const driver of flags.driver) if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(driver)) throw new UserError(`--driver ${driver}: not a driver name`);
  let maxRuns: number | undefined;
  if (flags.maxRuns !== undefined) {
    if (!/^\d+$/.test(flags.maxRuns) || Number(flags.maxRuns) < 1) throw new UserError(`--max-runs ${flags.maxRuns}: must be a whole number of at least 1`);
    maxRuns = Number(flags.maxRuns);
  }
  let pollMs = 5000;
  if (flags.poll !== undefined) {
    const seconds = Number(flags.poll);
    if (!/^\d+(\.\d+)?$/.test(flags.poll) || !(seconds >= 0.05) || seconds > 3600) throw new UserError(`--poll ${flags.poll}: must be seconds from 0.05 to 3600`);
    pollMs = Math.round(seconds * 1000);
  }
  const workdir = path.resolve(io.cwd, flags.workdir ?? '.');
  if (!fs.existsSync(workdir) || !fs.statSync(workdir).isDirectory()) throw new UserError(`--workdir ${workdir}: not a directory`);
  const stateDir = flags.state ? path.resolve(io.cwd, flags.state) : defaultStateDir(name, io.env);
  try {
    fs.mkdirSync(stateDir, { recursive: true });
    fs.accessSync(stateDir, fs.constants.W_OK);
  } catch (error) {
    throw new UserError(`--state ${stateDir}: cannot write there (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return { server: flags.server, token, tokenFile, name, plants: flags.plant, drivers: flags.driver, maxRuns, workdir, stateDir, pollMs };
}

const collect = (value: string, previous: string[]) => [...previous, value];

/**
 * `pak2 runner --server URL --token-file F [--name N] [--plant P]...
 * [--driver D]... [--max-runs N] [--workdir DIR] [--state DIR] [--poll S]`
 * (docs/runners/level2.md). SIGINT/SIGTERM stop the agent (operator, the
 * goal requeued), finish the run with what was observed, and exit 0 (with
 * no run in progress, the runner just exits 0); a second signal exits at
 * once (130).
 */
export function registerRunner(program: Command, io: CliIO): void {
  program
    .command('runner')
    .description("run goals from a garden's server on this machine: claim under a lease, run the agent, heartbeat, finish with the observed outcome")
    .option('--server <url>', "the garden's server, e.g. http://garden-host:7717")
    .option('--token-file <file>', "a file holding the garden's bearer token (<runtime-root>/serve/token on the garden's machine)")
    .option('--name <name>', 'this runner\'s name (default: a runner token\'s name, else the host name)')
    .option('--plant <plant>', 'take only goals of this plant (repeatable)', collect, [])
    .option('--driver <driver>', 'take only goals whose driver is this (repeatable)', collect, [])
    .option('--max-runs <n>', 'exit after N finished runs (default: run until stopped)')
    .option('--workdir <dir>', "where the agent works: a checkout of the garden's repository (default: the current directory)")
    .option('--state <dir>', 'where the runner keeps its cursor and its runs (default $XDG_STATE_HOME/pak2/runner-<name>)')
    .option('--poll <seconds>', 'seconds between claims while nothing is queued (default 5)')
    .action(async (flags: RunnerFlags) => {
      const settings = await runnerSettings(flags, io);
      const { runRunner } = await import('../../runner/runner.js');
      const controller = new AbortController();
      let signals = 0;
      const onSignal = (name: NodeJS.Signals) => {
        signals += 1;
        if (signals > 1) {
          io.err(`pak2 runner ${settings.name}: ${name} again; exiting without finishing`);
          process.exit(130);
        }
        // The runner says what it does about it (stops its agent and finishes the run, or exits: no run in progress).
        controller.abort(name);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        await runRunner({
          server: settings.server,
          token: settings.token,
          tokenFile: settings.tokenFile,
          name: settings.name,
          host: os.hostname(),
          plants: settings.plants,
          drivers: settings.drivers,
          ...(settings.maxRuns !== undefined ? { maxRuns: settings.maxRuns } : {}),
          workdir: settings.workdir,
          stateDir: settings.stateDir,
          pollMs: settings.pollMs,
          env: io.env,
          err: (line) => io.err(line),
          signal: controller.signal,
        });
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
