/**
 * PAK2.toml read again while pak2 runs (issue 28, item 6;
 * docs/garden/level2.md, "Changing PAK2.toml while pak2 runs"): a change
 * that loads is in force, one that does not keeps the configuration read
 * last and names the file and the key, restart keys keep their start value
 * and say so, and every key of the schema is documented as live or restart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../source/contracts/index.js';
import { changedKeys, describeConfigStatus, loadGarden, parseConfig, reloadConfig, RESTART_KEYS, type Garden } from '../../source/garden/index.js';
import { FAKE_AGENT, makeTestGarden } from '../support/garden.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

let garden: (Garden & { cleanup: () => void }) | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

const TRAP = `\n[drivers.trap]\ncommand = ${JSON.stringify([process.execPath, FAKE_AGENT, 'success'])}\n`;

/** Rewrites PAK2.toml (a new mtime and size, as an editor's save). */
function edit(g: Garden, change: (text: string) => string): void {
  fs.writeFileSync(g.paths.configFile, change(fs.readFileSync(g.paths.configFile, 'utf8')));
}

describe('reloadConfig', () => {
  it('an unchanged file is the baseline: nothing to say, the same config object', async () => {
    garden = await makeTestGarden();
    const before = garden.config;
    expect(reloadConfig(garden)).toMatchObject({ version: 0, restart: [], applied: [] });
    expect(reloadConfig(garden).version).toBe(0);
    expect(garden.config).toBe(before);
  });

  it('an edit between loadGarden and the first look is told with its keys (the loaded text is the baseline)', async () => {
    garden = await makeTestGarden();
    const loaded = loadGarden(garden.paths.gardenRoot);
    edit(loaded, (t) => t + TRAP);
    expect(reloadConfig(loaded)).toMatchObject({ version: 1, applied: ['drivers.trap.command'] });
    expect(loaded.config.drivers.trap).toBeDefined();
  });

  it('a driver added is in force, named as the key it added', async () => {
    garden = await makeTestGarden();
    reloadConfig(garden);
    expect(garden.config.drivers.trap).toBeUndefined();
    edit(garden, (t) => t + TRAP);
    const status = reloadConfig(garden);
    expect(status).toMatchObject({ version: 1, applied: ['drivers.trap.command'], restart: [] });
    expect(status.problem).toBeUndefined();
    expect(garden.config.drivers.trap).toEqual({ command: [process.execPath, FAKE_AGENT, 'success'] });
    expect(describeConfigStatus(status)).toEqual([`${garden.paths.configFile} read again: drivers.trap.command in force`]);
  });

  it('a bad edit keeps the last good configuration whole and names the file and key; a good edit after it clears it', async () => {
    garden = await makeTestGarden();
    reloadConfig(garden);
    edit(garden, (t) => t + TRAP);
    reloadConfig(garden);
    const good = garden.config;
    // One bad value among good changes: nothing of the file applies.
    edit(garden, (t) => t.replace('watchdog_seconds = 300', 'watchdog_seconds = -5').replace('[drivers.trap]', '[drivers.other]'));
    const bad = reloadConfig(garden);
    expect(garden.config).toBe(good);
    expect(garden.config.drivers.trap).toBeDefined();
    expect(bad.where).toEqual(['coordinator.watchdog_seconds']);
    expect(bad.problem).toBe(`${garden.paths.configFile}: coordinator.watchdog_seconds: INVALID_CONFIG_VALUE (must be a whole number of seconds from 1 to 2147483; got -5); the configuration read last stays in force`);
    // Looked at again, unchanged: the same status, not said again.
    expect(reloadConfig(garden)).toBe(bad);
    edit(garden, (t) => t.replace('watchdog_seconds = -5', 'watchdog_seconds = 30'));
    const fixed = reloadConfig(garden);
    expect(fixed.problem).toBeUndefined();
    expect(fixed).toMatchObject({ version: bad.version + 1, fixed: true, applied: ['coordinator.watchdog_seconds', 'drivers.other.command', 'drivers.trap.command'] });
    expect(garden.config.coordinator.watchdogSeconds).toBe(30);
    expect(garden.config.drivers.trap).toBeUndefined();
    expect(describeConfigStatus(fixed)[0]).toBe(`${garden.paths.configFile} loads again: coordinator.watchdog_seconds, drivers.other.command, drivers.trap.command in force`);
  });

  it('a TOML syntax error is named by line and column; a file removed, by the file', async () => {
    garden = await makeTestGarden();
    reloadConfig(garden);
    edit(garden, (t) => `${t}\n[coordinator\n`);
    const syntax = reloadConfig(garden);
    expect(syntax.where).toEqual([expect.stringMatching(/^line \d+, column \d+$/)]);
    expect(syntax.problem).toMatch(/^.*PAK2\.toml: line \d+, column \d+: .*; the configuration read last stays in force$/);
    fs.rmSync(garden.paths.configFile);
    const gone = reloadConfig(garden);
    expect(gone).toMatchObject({ where: ['PAK2.toml'], problem: `${garden.paths.configFile}: cannot read (ENOENT); the configuration read last stays in force` });
    expect(garden.config.defaults.driver).toBe('success');
  });

  it('a restart key keeps its start value and says "restart to apply"; the live keys of the same edit apply; set back, it clears', async () => {
    garden = await makeTestGarden();
    reloadConfig(garden);
    const original = fs.readFileSync(garden.paths.configFile, 'utf8');
    edit(garden, (t) => t.replace('root = ".runtime"', 'root = "elsewhere"').replace('watchdog_seconds = 300', 'watchdog_seconds = 45') + '\n[garden]\nname = "renamed"\n[store]\nurl = "postgres://pak2@127.0.0.1:5432/garden"\n');
    const status = reloadConfig(garden);
    expect(status.restart).toEqual(['runtime.root', 'store.url', 'garden.name']);
    expect(status.applied).toEqual(['coordinator.watchdog_seconds']);
    expect(garden.config).toMatchObject({ runtimeRoot: '.runtime', gardenName: 'garden', storeUrl: undefined });
    expect(garden.config.coordinator.watchdogSeconds).toBe(45);
    expect(describeConfigStatus(status)).toEqual([
      `${garden.paths.configFile} read again: coordinator.watchdog_seconds in force`,
      `${garden.paths.configFile}: runtime.root, store.url, garden.name changed: restart to apply (the value read at start stays in force)`,
    ]);
    fs.writeFileSync(garden.paths.configFile, original);
    const back = reloadConfig(garden);
    expect(back).toMatchObject({ restart: [], applied: ['coordinator.watchdog_seconds'] });
    expect(garden.config.coordinator.watchdogSeconds).toBe(300);
  });

  it('an edit of comments or spacing only is read but changes and says nothing', async () => {
    garden = await makeTestGarden();
    const status = reloadConfig(garden);
    const before = garden.config;
    edit(garden, (t) => `# a comment\n\n${t}\n`);
    expect(reloadConfig(garden)).toBe(status);
    expect(garden.config).toBe(before);
  });
});

describe('changedKeys', () => {
  it('compares tables key by key (a table on one side only as empty), anything else whole', () => {
    expect(changedKeys({ a: { b: 1, c: [1, 2] } }, { a: { b: 1, c: [1, 3] }, d: { e: 'x' } })).toEqual(['a.c', 'd.e']);
    expect(changedKeys({ schedule: [{ name: 'x' }] }, {})).toEqual(['schedule']);
    expect(changedKeys({ a: 1 }, { a: 1 })).toEqual([]);
  });
});

/** Every key of the PAK2.toml schema, as the docs write it: `[section].key`, `[drivers.<name>].command`, `[[schedule]]`. */
function schemaKeys(): string[] {
  type Def = { type: string; innerType?: unknown; valueType?: unknown; shape?: Record<string, unknown> };
  const def = (schema: unknown): Def => {
    let d = (schema as { def: Def }).def;
    while (d.type === 'optional') d = (d.innerType as { def: Def }).def;
    return d;
  };
  const keys: string[] = [];
  for (const [section, schema] of Object.entries(def(ConfigSchema).shape!)) {
    const d = def(schema);
    if (d.type === 'array') keys.push(`[[${section}]]`);
    else if (d.type === 'record') {
      const placeholder = section === 'drivers' ? '<name>' : '<class>';
      for (const key of Object.keys(def(d.valueType).shape!)) keys.push(`[${section}.${placeholder}].${key}`);
    } else for (const key of Object.keys(d.shape!)) keys.push(`[${section}].${key}`);
  }
  return keys;
}

describe('docs/garden/level2.md, "Changing PAK2.toml while pak2 runs"', () => {
  const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs/garden/level2.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Changing PAK2.toml while pak2 runs'), doc.indexOf('\n## ', doc.indexOf('## Changing PAK2.toml while pak2 runs') + 5));
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));

  it('lists every key of the schema once, as live or restart', () => {
    const listed = rows.flatMap((row) => [...row.split(' | ')[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
    expect([...listed].sort()).toEqual(schemaKeys().sort());
    for (const row of rows) expect(row.split(' | ')[1]).toMatch(/^(live|restart): /);
  });

  it('says restart for exactly the keys the code holds until a restart, and PAK2.toml.example marks them', () => {
    const restart = rows.filter((row) => row.split(' | ')[1]!.startsWith('restart')).flatMap((row) => [...row.split(' | ')[0]!.matchAll(/`\[(\w+)\]\.(\w+)`/g)].map((m) => `${m[1]}.${m[2]}`));
    expect(restart.sort()).toEqual(Object.keys(RESTART_KEYS).sort());
    const example = fs.readFileSync(path.join(REPO_ROOT, 'PAK2.toml.example'), 'utf8');
    parseConfig(example);
    const lines = example.split('\n');
    for (const key of Object.keys(RESTART_KEYS)) {
      const [table, name] = key.split('.');
      const start = lines.findIndex((l) => new RegExp(`^#? ?\\[${table}\\]`).test(l));
      const at = lines.findIndex((l, i) => i > start && new RegExp(`^#? ?${name} = `).test(l));
      expect(lines[at - 1], key).toBe('# Restart to apply.');
    }
  });
});
