import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appendJsonLine } from '../../source/store/index.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';

afterEach(() => cleanupFixtures());

describe('appendJsonLine', () => {
  it('makes its directory; a torn line another writer left, even in a file replaced by one of the same size, does not swallow the next line', async () => {
    const dir = makeTempDir({}, 'pak2-append-');
    const file = path.join(dir, 'deep', 'log.jsonl');
    await appendJsonLine(file, { n: 1 });
    await appendJsonLine(file, { n: 2 });
    fs.appendFileSync(file, '{"torn": tr');
    await appendJsonLine(file, { n: 3 });
    // A file replaced by one of the same size, ending mid-line.
    const text = fs.readFileSync(file, 'utf8');
    fs.rmSync(file);
    fs.writeFileSync(file, `${text.slice(0, -1)}x`);
    await appendJsonLine(file, { n: 4 });
    expect(fs.readFileSync(file, 'utf8').split('\n')).toEqual(['{"n":1}', '{"n":2}', '{"torn": tr', '{"n":3}x', '{"n":4}', '']);
  });
});
