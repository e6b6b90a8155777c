/**
 * Store contract (issue 27): schedules.json, each `[[schedule]]`'s state,
 * read and written the same on the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readSchedulesState, writeSchedulesState } from '../../../source/store/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: schedules (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('the state is empty until written, then read back whole; an invalid one is refused and nothing is written', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await readSchedulesState(paths)).toEqual({ schedules: {} });
    const state = { schedules: { nightly: { since: '2026-05-01T10:00:00.000Z', last_due_at: '2026-05-02T03:00:00.000Z', last_fired_at: '2026-05-02T03:00:01.000Z', last_goal: '7-nightly-tidy' } } };
    await writeSchedulesState(paths, state);
    expect(await readSchedulesState(paths)).toEqual(state);
    await expect(writeSchedulesState(paths, { schedules: { nightly: { since: 'yesterday' } } } as never)).rejects.toMatchObject({ code: 'INVALID_RECORD' });
    expect(await readSchedulesState(paths)).toEqual(state);
  });

  it('a damaged state is INVALID_RECORD naming schedules.json and the field', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    await putRaw(garden, { kind: 'schedules', key: 'garden', file: 'schedules.json' }, { schedules: { nightly: { since: 'yesterday' } } });
    await expect(readSchedulesState(garden.paths)).rejects.toMatchObject({ code: 'INVALID_RECORD', message: expect.stringMatching(/schedules\.json: .*since/) });
  });
});
