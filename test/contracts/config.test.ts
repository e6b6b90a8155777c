import { describe, expect, it } from 'vitest';
import { REASON_CODES, validateConfig, type ValidationIssue } from '../../source/contracts/index.js';
import { weirdInputs } from '../helpers/records.js';

/** Codes validateConfig documents in its TSDoc. */
const CONFIG_CODES = ['UNKNOWN_CONFIG_KEY', 'INVALID_CONFIG_VALUE', 'INVALID_SHAPE'];

const produced = new Set<string>();

function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  produced.add(code);
}

const FULL = {
  runtime: { root: '.runtime' },
  garden: { name: 'my-garden' },
  defaults: { driver: 'claude', model: 'claude-opus-4-6', reasoning_effort: 'high' },
  coordinator: { interval_seconds: 60, watchdog_seconds: 300, run_timeout_seconds: 3600, max_concurrent_runs: 1 },
  drivers: { codex: { command: 'codex' }, fake: { command: ['node', 'agent.mjs', '--flag'] }, bare: {} },
};

describe('validateConfig', () => {
  it('accepts an empty table (every key is optional)', () => {
    expect(validateConfig({})).toEqual([]);
  });

  it('accepts every documented key', () => {
    expect(validateConfig(FULL)).toEqual([]);
  });

  it.each([['a'], ['garden'], ['my.garden_1'], ['g-1']])('accepts garden name %j', (name) => {
    expect(validateConfig({ garden: { name } })).toEqual([]);
  });

  it.each([
    ['top-level key', { coordinatr: { interval_seconds: 5 } }, 'coordinatr'],
    ['top-level scalar', { verbose: true }, 'verbose'],
    ['key in [runtime]', { runtime: { rooot: 'x' } }, 'runtime.rooot'],
    ['key in [garden]', { garden: { title: 'x' } }, 'garden.title'],
    ['key in [defaults]', { defaults: { effort: 'x' } }, 'defaults.effort'],
    ['key in [coordinator]', { coordinator: { intervall_seconds: 5 } }, 'coordinator.intervall_seconds'],
    ['key in [drivers.x]', { drivers: { x: { args: ['a'] } } }, 'drivers.x.args'],
  ])('UNKNOWN_CONFIG_KEY for an unknown %s, naming it', (_label, config, field) => {
    expectOnly(validateConfig(config), 'UNKNOWN_CONFIG_KEY', field);
    expect(validateConfig(config)[0]!.message).toContain(field.split('.').at(-1)!);
  });

  it('reports several unknown keys', () => {
    const issues = validateConfig({ a: 1, coordinator: { b: 2 } });
    expect(issues.map((i) => i.code)).toEqual(['UNKNOWN_CONFIG_KEY', 'UNKNOWN_CONFIG_KEY']);
    expect(issues.map((i) => i.field).sort()).toEqual(['a', 'coordinator.b']);
  });

  const coordinatorKeys = ['interval_seconds', 'watchdog_seconds', 'run_timeout_seconds', 'max_concurrent_runs'];
  const badCoordinatorValues = coordinatorKeys.flatMap((key): [string, unknown][] => [[key, -1], ...(key === 'max_concurrent_runs' ? [] : [[key, 0] as [string, unknown]]), [key, 1.5], [key, '60'], [key, true]]);
  it.each(badCoordinatorValues)(
    'INVALID_CONFIG_VALUE for coordinator.%s = %j',
    (key, value) => {
      expectOnly(validateConfig({ coordinator: { [key]: value } }), 'INVALID_CONFIG_VALUE', `coordinator.${key}`);
    },
  );

  it('coordinator.max_concurrent_runs = 0 is valid: only remote runners run goals (docs/runners/level2.md)', () => {
    expect(validateConfig({ coordinator: { max_concurrent_runs: 0 } })).toEqual([]);
  });

  it.each([[0], [2], [1.5], ['600']])('INVALID_CONFIG_VALUE for runners.lease_ttl_seconds = %j', (value) => {
    expectOnly(validateConfig({ runners: { lease_ttl_seconds: value } }), 'INVALID_CONFIG_VALUE', 'runners.lease_ttl_seconds');
  });

  it.each([['Bad Name'], ['../x'], ['a/b'], ['.hidden'], ['trailing-'], [''], [5]])('INVALID_CONFIG_VALUE for garden.name %j', (name) => {
    expectOnly(validateConfig({ garden: { name } }), 'INVALID_CONFIG_VALUE', 'garden.name');
  });

  it.each([[''], [5]])('INVALID_CONFIG_VALUE for runtime.root %j', (root) => {
    expectOnly(validateConfig({ runtime: { root } }), 'INVALID_CONFIG_VALUE', 'runtime.root');
  });

  it.each([['driver'], ['model'], ['reasoning_effort']])('INVALID_CONFIG_VALUE for an empty or numeric defaults.%s', (key) => {
    expectOnly(validateConfig({ defaults: { [key]: '' } }), 'INVALID_CONFIG_VALUE', `defaults.${key}`);
    expectOnly(validateConfig({ defaults: { [key]: 7 } }), 'INVALID_CONFIG_VALUE', `defaults.${key}`);
  });

  it.each([[5], [''], [[5]], [{ bin: 'x' }]])('INVALID_CONFIG_VALUE for drivers.x.command %j', (command) => {
    const issues = validateConfig({ drivers: { x: { command } } });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.code).toBe('INVALID_CONFIG_VALUE');
    expect(issues[0]!.field.startsWith('drivers.x.command')).toBe(true);
    produced.add('INVALID_CONFIG_VALUE');
  });

  it('INVALID_CONFIG_VALUE for an empty command array', () => {
    expectOnly(validateConfig({ drivers: { x: { command: [] } } }), 'INVALID_CONFIG_VALUE', 'drivers.x.command');
  });

  it.each([
    ['[coordinator] is a number', { coordinator: 5 }, 'coordinator'],
    ['[drivers.x] is a number', { drivers: { x: 5 } }, 'drivers.x'],
  ])('INVALID_CONFIG_VALUE (not MISSING_REQUIRED_FIELD) when %s', (_label, config, field) => {
    expectOnly(validateConfig(config), 'INVALID_CONFIG_VALUE', field);
  });

  it.each([['array', []], ['null', null], ['string', 'a = 1'], ['number', 1]])('INVALID_SHAPE for a document that is %s', (_label, doc) => {
    expectOnly(validateConfig(doc), 'INVALID_SHAPE', '');
  });

  it.each(weirdInputs())('never throws on %s', (_label, input) => {
    const issues = validateConfig(input);
    expect(Array.isArray(issues)).toBe(true);
    for (const i of issues) expect(REASON_CODES).toContain(i.code);
  });

  it('produced every code of the TSDoc', () => {
    for (const code of CONFIG_CODES) expect([...produced], code).toContain(code);
  });
});
