import { describe, expect, it } from 'vitest';
import { PLANT_STATUSES, REASON_CODES, validatePlant, type ValidationIssue } from '../../source/contracts/index.js';
import { plantRecord, T1, weirdInputs, without } from '../helpers/records.js';

/** Codes validatePlant documents in its TSDoc. */
const PLANT_CODES = ['MISSING_REQUIRED_FIELD', 'INVALID_PLANT_NAME', 'INVALID_STATUS', 'INVALID_TIMESTAMP', 'INVALID_FIELD_TYPE', 'INVALID_SHAPE'];

const produced = new Set<string>();

function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  produced.add(code);
}

describe('validatePlant', () => {
  it('accepts a valid active plant', () => {
    expect(validatePlant(plantRecord())).toEqual([]);
  });

  it('accepts an archived plant with archived_at, a description and unknown fields', () => {
    expect(validatePlant(plantRecord({ status: 'archived', archived_at: T1, description: 'looks after things', x: 1 }))).toEqual([]);
  });

  it('has exactly the statuses active and archived', () => {
    expect([...PLANT_STATUSES].sort()).toEqual(['active', 'archived']);
  });

  it.each(['name', 'seed', 'status', 'commissioned_at'])('MISSING_REQUIRED_FIELD when %s is absent', (field) => {
    expectOnly(validatePlant(without(plantRecord(), field)), 'MISSING_REQUIRED_FIELD', field);
  });

  it.each([['../evil'], ['a/b'], ['X'], ['Gardener'], [''], ['..'], ['a'.repeat(65)]])('INVALID_PLANT_NAME for name %j', (name) => {
    expectOnly(validatePlant(plantRecord({ name })), 'INVALID_PLANT_NAME', 'name');
  });

  it.each([['../evil'], ['a/b'], ['Seed']])('an unsafe seed name %j is refused on field seed', (seed) => {
    const issues = validatePlant(plantRecord({ seed }));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.field).toBe('seed');
    expect(PLANT_CODES).toContain(issues[0]!.code);
  });

  it.each([['dead'], ['Active'], ['']])('INVALID_STATUS for status %j', (status) => {
    expectOnly(validatePlant(plantRecord({ status })), 'INVALID_STATUS', 'status');
  });

  it.each([['commissioned_at'], ['archived_at']])('INVALID_TIMESTAMP for a malformed %s', (field) => {
    expectOnly(validatePlant(plantRecord({ [field]: '2024-05-01T12:00:00+05:30' })), 'INVALID_TIMESTAMP', field);
  });

  it('INVALID_FIELD_TYPE for a non-string name', () => {
    expectOnly(validatePlant(plantRecord({ name: 5 })), 'INVALID_FIELD_TYPE', 'name');
  });

  it.each([['array', []], ['null', null], ['string', 'gardener'], ['number', 0]])('INVALID_SHAPE for a document that is %s', (_label, doc) => {
    expectOnly(validatePlant(doc), 'INVALID_SHAPE', '');
  });

  it.each(weirdInputs())('never throws on %s', (_label, input) => {
    const issues = validatePlant(input);
    expect(Array.isArray(issues)).toBe(true);
    for (const i of issues) expect(REASON_CODES).toContain(i.code);
  });

  it('produced every code of the TSDoc', () => {
    for (const code of PLANT_CODES) expect([...produced], code).toContain(code);
  });
});
