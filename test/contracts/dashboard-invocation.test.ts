/**
 * Dashboard invocation records (seed 002: validate.py validates "dashboard
 * invocation records"; docs/dashboard/level2.md): validateDashboardInvocation
 * and the published schema/dashboard-invocation.schema.json (ajv, draft
 * 2020-12) accept a record the dashboard writes and refuse damaged ones.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { formatIssue, validateDashboardInvocation } from '../../source/contracts/index.js';

const SCHEMA_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schema/dashboard-invocation.schema.json');
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(JSON.parse(fs.readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>);

const good = { id: '20261129T100637-1a2b3c4d', command: 'pak2 dashboard', pid: 4242, started_at: '2026-11-29T10:06:37.120Z', finished_at: '2026-11-29T10:09:02.480Z', cost: { source: 'estimated', wall_seconds: 145.36 } };

describe('dashboard invocation records', () => {
  it('the record the docs show is valid, to the validator and to the JSON Schema; unknown fields are kept', () => {
    expect(validateDashboardInvocation(good)).toEqual([]);
    expect(validate(good)).toBe(true);
    expect(validateDashboardInvocation({ ...good, host: 'box' })).toEqual([]);
  });

  it.each([
    ['an id of another form', { ...good, id: 'dash-1' }, 'id: INVALID_ID_FORMAT'],
    ['no command', (({ command: _c, ...rest }) => rest)(good), 'command: MISSING_REQUIRED_FIELD'],
    ['a pid that is no process id', { ...good, pid: 0 }, 'pid: INVALID_FIELD_TYPE'],
    ['a local time', { ...good, started_at: '2026-11-29 10:06' }, 'started_at: INVALID_TIMESTAMP'],
    ['a provider cost', { ...good, cost: { source: 'provider', wall_seconds: 1 } }, 'cost.source: INVALID_COST_SOURCE'],
    ['a negative wall time', { ...good, cost: { source: 'estimated', wall_seconds: -1 } }, 'cost.wall_seconds: INVALID_COST_FIELD'],
    ['no cost', (({ cost: _c, ...rest }) => rest)(good), 'cost: MISSING_REQUIRED_FIELD'],
  ])('%s is refused by both', (_what, record, first) => {
    const issues = validateDashboardInvocation(record);
    expect(issues.length).toBeGreaterThan(0);
    expect(formatIssue(issues[0]!)).toMatch(new RegExp(`^${first.replace(/[.]/g, '\\.')} \\(`));
    expect(validate(record)).toBe(false);
  });

  it('a document that is no JSON object is INVALID_SHAPE', () => {
    expect(validateDashboardInvocation([good]).map((i) => i.code)).toEqual(['INVALID_SHAPE']);
  });
});
