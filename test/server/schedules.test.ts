/**
 * `GET /api/v1/schedules` (docs/schedules/level2.md, docs/server/level2.md):
 * the [[schedule]] entries with their state, as PAK2.toml says now, for a
 * read token too.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createToken } from '../../source/server/tokens.js';
import { writeSchedulesState } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { api, serve } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('GET /schedules', () => {
  it('lists each schedule with its next due time and last goal, and sees an entry added after the server started', async () => {
    const g = await makeTestGarden({ extraToml: '[[schedule]]\nname = "nightly"\ncron = "0 3 * * *"\nbody = "Tidy"\n' });
    cleanups.push(() => g.cleanup());
    await writeSchedulesState(g.paths, { schedules: { nightly: { since: '2026-05-01T10:00:00.000Z', last_due_at: '2026-05-02T03:00:00.000Z', last_fired_at: '2026-05-02T03:00:01.000Z', last_goal: '7-nightly-tidy' } } });
    const server = await serve(g, cleanups, { webhooks: false });
    const { token } = await createToken(g.paths, { role: 'read', name: 'viewer' });
    const response = await api(server, '/schedules', { token });
    expect(response.status).toBe(200);
    const { schedules } = (await response.json()) as { schedules: Array<Record<string, unknown>> };
    expect(schedules).toEqual([
      {
        name: 'nightly',
        cron: '0 3 * * *',
        timezone: 'UTC',
        overlap: 'skip',
        enabled: true,
        next_due_at: expect.stringMatching(/T03:00:00\.000Z$/),
        last_fired_at: '2026-05-02T03:00:01.000Z',
        last_due_at: '2026-05-02T03:00:00.000Z',
        last_goal: '7-nightly-tidy',
        last_goal_status: 'missing',
        last_goal_open: false,
      },
    ]);
    fs.appendFileSync(g.paths.configFile, '\n[[schedule]]\nname = "weekly"\ncron = "0 9 * * MON"\nbody = "Review"\n');
    const again = (await (await api(server, '/schedules')).json()) as { schedules: Array<{ name: string }> };
    expect(again.schedules.map((s) => s.name)).toEqual(['nightly', 'weekly']);
  });
});
