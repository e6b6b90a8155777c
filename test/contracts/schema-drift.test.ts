import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderSchemas, SCHEMA_FILES } from '../../source/contracts/json-schema.js';

const SCHEMA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schema');
const rendered = renderSchemas();

/** First differing line of two texts, for a readable failure. */
function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    if (a[i] !== b[i]) return `line ${i + 1}: expected ${JSON.stringify(a[i] ?? '<end of file>')}, found ${JSON.stringify(b[i] ?? '<end of file>')}`;
  }
  return 'no line differs';
}

describe('schema/ matches the zod contracts', () => {
  it('renders one schema per SCHEMA_FILES entry', () => {
    expect(Object.keys(rendered).sort()).toEqual(Object.keys(SCHEMA_FILES).sort());
    expect(Object.keys(rendered).length).toBeGreaterThan(0);
  });

  it.each(Object.keys(rendered).map((name) => [name]))('schema/%s is up to date', (name) => {
    const file = path.join(SCHEMA_DIR, name);
    const expected = rendered[name]!;
    if (!fs.existsSync(file)) {
      expect.fail(`schema/${name} is missing: run \`npm run schema\` to regenerate schema/ from source/contracts`);
    }
    const actual = fs.readFileSync(file, 'utf8');
    if (actual !== expected) {
      expect.fail(
        `schema/${name} is out of date with source/contracts (${firstDifference(expected, actual)}): run \`npm run schema\` to regenerate it`,
      );
    }
  });

  it('schema/ holds no file that renderSchemas() does not produce', () => {
    const stale = fs.readdirSync(SCHEMA_DIR).filter((name) => !(name in rendered));
    if (stale.length > 0) {
      expect.fail(`schema/ has stale file(s) ${stale.join(', ')} that no contract produces: delete them and run \`npm run schema\``);
    }
  });

  it.each(Object.entries(rendered))('rendered %s is a JSON Schema document with an $id and a title', (name, text) => {
    const doc = JSON.parse(text) as Record<string, unknown>;
    expect(doc.$id).toBe(`urn:pak2:schema:${name}`);
    expect(doc.title).toBe(SCHEMA_FILES[name as keyof typeof SCHEMA_FILES].title);
    expect(String(doc.$schema)).toContain('2020-12');
    expect(doc.type).toBe('object');
    expect(text.endsWith('}\n')).toBe(true);
  });

  it('renders the same text every time (deterministic)', () => {
    expect(renderSchemas()).toEqual(rendered);
  });

  it('the run schema requires the seed required fields', () => {
    const run = JSON.parse(rendered['run.schema.json']!) as { required: string[] };
    expect([...run.required].sort()).toEqual(['driver', 'goal', 'id', 'model', 'plant', 'started_at', 'status']);
  });
});
