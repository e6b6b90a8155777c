/**
 * After `pak2 store import`, the files it moved are a stale copy: a shell
 * that names no store is refused with the marker's words, never silently
 * handed the old records (the fresh-user check submitted a goal into them).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createGoal } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { testDatabase } from '../support/pg-test.js';

describe('pak2 store import marks the files it moved', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  afterAll(() => db?.drop());

  it('a command that names no store then refuses them; naming the store works on the moved records', async () => {
    db = await testDatabase('pak2_moved');
    const g = await makeTestGarden();
    try {
      const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'moved goal' });
      const imported = await runCli(['store', 'import', '--url', db.url, '--garden', g.paths.gardenRoot]);
      expect(imported.code, imported.stderr).toBe(0);
      expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'moved-to-store.json'))).toBe(true);
      const stale = await runCli(['submit', '--plant', 'gardener', '--type', 'build', '--body', 'lost?', '--garden', g.paths.gardenRoot]);
      expect(stale.code).not.toBe(0);
      expect(stale.stderr).toMatch(/moved-to-store\.json: this garden's records were moved to postgres:\/\/postgres@127\.0\.0\.1:\d+\/\S+ on .* \(pak2 store import\)/);
      expect(fs.readdirSync(g.paths.goalsDir).filter((n) => n.endsWith('.json'))).toEqual([`${goal.id}.json`]);
      const named = await runCli(['goals', '--garden', g.paths.gardenRoot], { env: { PAK2_STORE_URL: db.url } });
      expect(named.code, named.stderr).toBe(0);
      expect(named.stdout).toContain(goal.id);
    } finally {
      g.cleanup();
    }
  }, 60_000);
});
