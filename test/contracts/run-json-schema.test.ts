/**
 * The published schema/run.schema.json, checked with a real JSON Schema
 * validator (ajv, draft 2020-12): it carries the seed's conditionally
 * required fields as `if`/`then` rules, agreeing with validateRun.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { FAILED_RUN_STATUSES, TERMINAL_RUN_STATUSES, validateRun } from '../../source/contracts/index.js';
import { runningRun, terminalRun, without } from '../helpers/records.js';

const SCHEMA_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schema/run.schema.json');
const schema = JSON.parse(fs.readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema);

/** True when the published run schema accepts `record`; agrees with validateRun on the conditional rules. */
function schemaAccepts(record: unknown): boolean {
  return validate(record) === true;
}

describe('schema/run.schema.json (ajv, draft 2020-12)', () => {
  it('a running run without cost or completed_at passes', () => {
    expect(schemaAccepts(runningRun())).toBe(true);
    expect(validateRun(runningRun())).toEqual([]);
  });

  it.each(TERMINAL_RUN_STATUSES.map((s) => [s]))('a valid terminal %s run passes', (status) => {
    expect(schemaAccepts(terminalRun(status))).toBe(true);
    expect(validateRun(terminalRun(status))).toEqual([]);
  });

  it.each(TERMINAL_RUN_STATUSES.map((s) => [s]))('a terminal %s run without cost fails', (status) => {
    const record = without(terminalRun(status), 'cost');
    expect(schemaAccepts(record)).toBe(false);
    expect(validate.errors).toContainEqual(expect.objectContaining({ keyword: 'required', params: { missingProperty: 'cost' } }));
  });

  it.each(TERMINAL_RUN_STATUSES.map((s) => [s]))('a terminal %s run without completed_at fails', (status) => {
    expect(schemaAccepts(without(terminalRun(status), 'completed_at'))).toBe(false);
    expect(validate.errors).toContainEqual(expect.objectContaining({ keyword: 'required', params: { missingProperty: 'completed_at' } }));
  });

  it('a killed run without failure_reason fails', () => {
    expect(schemaAccepts(without(terminalRun('killed'), 'failure_reason'))).toBe(false);
    expect(validate.errors).toContainEqual(expect.objectContaining({ keyword: 'required', params: { missingProperty: 'failure_reason' } }));
  });

  it.each(FAILED_RUN_STATUSES.map((s) => [s]))('a %s run without failure_reason fails', (status) => {
    expect(schemaAccepts(without(terminalRun(status), 'failure_reason'))).toBe(false);
  });

  it('a success run needs no failure_reason', () => {
    expect(schemaAccepts(without(terminalRun('success'), 'failure_reason'))).toBe(true);
  });

  it('a +00:00 UTC timestamp passes; a +02:00 offset fails', () => {
    expect(schemaAccepts(runningRun({ started_at: '2026-11-30T10:00:00+00:00' }))).toBe(true);
    expect(schemaAccepts(runningRun({ started_at: '2026-11-30T10:00:00+02:00' }))).toBe(false);
  });
});
