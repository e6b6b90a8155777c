import fs from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { ConfigError, parseConfig, type Garden, type GardenConfig } from './config.js';
import { loadedText } from './loaded.js';

/**
 * The PAK2.toml keys a running process reads once, at its start
 * (docs/garden/level2.md, "Changing PAK2.toml while pak2 runs"): where the
 * garden's state lives, the reply directory's name, pak2's own folder, and
 * how runs are isolated (worktrees from which base). A change on disk is
 * said ("restart to apply") and the value read at start stays in force until
 * pak2 starts again. Every other key is live: read again when the file
 * changes. Each entry reads the key's value from a loaded configuration.
 */
export const RESTART_KEYS: Readonly<Record<string, (config: GardenConfig) => unknown>> = {
  'runtime.root': (c) => c.runtimeRoot,
  'store.url': (c) => c.storeUrl,
  'garden.name': (c) => c.gardenName,
  'garden.home': (c) => c.home,
  'coordinator.isolation': (c) => c.isolation,
  'merge.base': (c) => c.merge.base,
};

/** What this process knows of PAK2.toml since it loaded it; see {@link reloadConfig}. */
export interface ConfigStatus {
  /** The file (absolute path). */
  file: string;
  /**
   * Counts the changes said so far (0: the file as loaded). A consumer that
   * tells the operator (headless lines, `pak2 serve`) says the status again
   * when this differs from the one it said last.
   */
  version: number;
  /** Why the file on disk is not in force (one line naming the file and the key), the configuration read last staying; absent when it loads. */
  problem?: string;
  /** Where `problem` is: the dotted keys (`drivers.trap.command`), or `line L, column C` for TOML syntax, or `PAK2.toml` for a file that cannot be read. */
  where?: string[];
  /** Keys whose value on disk differs from the one read at start: they apply at the next start ({@link RESTART_KEYS}). */
  restart: string[];
  /** The live keys the last change put in force (dotted; a `[[schedule]]` change is `schedule`). */
  applied: string[];
  /** True when this change made a file that did not load load again. */
  fixed?: boolean;
}

/**
 * The pure decision of a reload: the configuration to put in force when
 * `loaded` is what PAK2.toml says now and `running` the one in force — the
 * loaded one, except that every {@link RESTART_KEYS} key keeps its running
 * (start) value — and the restart keys whose value differs.
 */
export function decideReload(running: GardenConfig, loaded: GardenConfig): { config: GardenConfig; restart: string[] } {
  const restart = Object.entries(RESTART_KEYS)
    .filter(([, read]) => canonical(read(running)) !== canonical(read(loaded)))
    .map(([key]) => key);
  const { isolation: _isolation, merge, ...rest } = loaded;
  const { base: _base, ...mergeRest } = merge;
  const config: GardenConfig = {
    ...rest,
    runtimeRoot: running.runtimeRoot,
    storeUrl: running.storeUrl,
    gardenName: running.gardenName,
    home: running.home,
    ...(running.isolation ? { isolation: running.isolation } : {}),
    merge: { ...mergeRest, ...(running.merge.base ? { base: running.merge.base } : {}) },
  };
  return { config, restart };
}

/**
 * The dotted keys whose values differ between two parsed TOML tables:
 * tables are compared key by key (a table on one side only counts as
 * empty on the other), anything else (values, arrays, `[[schedule]]`) as a
 * whole.
 */
export function changedKeys(before: unknown, after: unknown, prefix = ''): string[] {
  const table = (value: unknown): Record<string, unknown> | undefined => (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) ? (value as Record<string, unknown>) : undefined);
  const a = table(before);
  const b = table(after);
  if ((a || before === undefined) && (b || after === undefined) && (a || b)) {
    const keys = [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])].sort();
    return keys.flatMap((key) => changedKeys(a?.[key], b?.[key], prefix ? `${prefix}.${key}` : key));
  }
  return canonical(before) === canonical(after) ? [] : [prefix];
}

/** JSON with every object's keys sorted: two configurations compare equal whatever order their keys were built in. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

interface ReloadState {
  /** The file's identity and times when last looked at. */
  stamp: string;
  /** Its text when last read; undefined when it could not be read. */
  text: string | undefined;
  /** The TOML table of the configuration in force. */
  raw: unknown;
  status: ConfigStatus;
}

/** Per loaded garden: what was read of its PAK2.toml (a garden object is one process's view of one garden). */
const states = new WeakMap<Garden, ReloadState>();

/** The TOML table of a text that loaded once; undefined if it no longer parses (it cannot: it loaded). */
function tomlOf(text: string): unknown {
  try {
    return parseToml(text);
  } catch {
    return undefined;
  }
}

function stampOf(file: string): string {
  try {
    const s = fs.statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return 'missing';
  }
}

/**
 * Reads PAK2.toml again when it changed (its inode, size or times; one
 * `stat` when it did not) and acts on {@link decideReload}: a file that
 * loads replaces `garden.config` (restart keys keep their start values); one
 * that does not (a TOML error, a bad value, a driver that does not exist,
 * a file gone) leaves the configuration read last in force and is
 * `problem`. Each consumer calls it where it acts on configuration — the
 * coordinator at the start of every pass, the snapshot at every load, the
 * operator actions and the HTTP server per call — so a change is in force
 * for the next thing done, whoever looks first. Never throws.
 */
export function reloadConfig(garden: Garden): ConfigStatus {
  const file = garden.paths.configFile;
  const stamp = stampOf(file);
  let state = states.get(garden);
  const loaded = state ? undefined : loadedText.get(garden.paths);
  if (loaded !== undefined) {
    // The text the garden was loaded from is the baseline: a change since is said with its keys.
    state = { stamp: '', text: loaded, raw: tomlOf(loaded), status: { file, version: 0, restart: [], applied: [] } };
    states.set(garden, state);
  }
  if (state?.stamp === stamp) return state.status;
  let text: string | undefined;
  let unreadable = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    unreadable = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
  if (state && text !== undefined && text === state.text) {
    state.stamp = stamp;
    return state.status;
  }
  const before: ConfigStatus = state?.status ?? { file, version: 0, restart: [], applied: [] };
  let next: GardenConfig;
  let raw: unknown;
  try {
    if (text === undefined) throw new ConfigError(`${file}: cannot read (${unreadable})`, ['PAK2.toml']);
    next = parseConfig(text, file);
    raw = parseToml(text);
  } catch (error) {
    const problem = `${(error as Error).message.split('\n')[0]}; the configuration read last stays in force`;
    const status: ConfigStatus = problem === before.problem ? before : { file, version: before.version + 1, problem, where: error instanceof ConfigError ? error.where : [], restart: before.restart, applied: [] };
    states.set(garden, { stamp, text, raw: state?.raw, status });
    return status;
  }
  const decided = decideReload(garden.config, next);
  const same = canonical(decided.config) === canonical(garden.config);
  if (!same) garden.config = decided.config;
  // The first look that finds the file as the garden was loaded from it is the baseline: nothing to say.
  // (Which keys changed is known from the second read on; a file changed before the first look is only "read again".)
  const applied = state?.raw !== undefined ? changedKeys(state.raw, raw).filter((key) => !(key in RESTART_KEYS)) : [];
  const news = Boolean(before.problem) || applied.length > 0 || decided.restart.join() !== before.restart.join() || (!state && !same);
  const status: ConfigStatus = news ? { file, version: before.version + 1, restart: decided.restart, applied, ...(before.problem ? { fixed: true } : {}) } : before;
  states.set(garden, { stamp, text, raw, status });
  return status;
}

/** How many keys a line names before it says "and N more". */
const KEYS_NAMED = 8;

function keyList(keys: readonly string[]): string {
  return keys.length > KEYS_NAMED ? `${keys.slice(0, KEYS_NAMED).join(', ')} and ${keys.length - KEYS_NAMED} more` : keys.join(', ');
}

/**
 * What a process without a view says of a {@link ConfigStatus} (headless
 * `pak2 cycle`, `pak2 serve`), one line each: the problem; or the keys now in
 * force; and the keys that wait for a restart.
 */
export function describeConfigStatus(status: ConfigStatus): string[] {
  if (status.problem) return [status.problem];
  const lines: string[] = [];
  const again = status.fixed ? `${status.file} loads again` : `${status.file} read again`;
  if (status.applied.length > 0) lines.push(`${again}: ${keyList(status.applied)} in force`);
  else if (status.fixed || status.restart.length === 0) lines.push(again);
  if (status.restart.length > 0) lines.push(`${status.file}: ${keyList(status.restart)} changed: restart to apply (the value read at start stays in force)`);
  return lines;
}
