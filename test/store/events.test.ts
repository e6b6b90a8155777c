import fs from 'node:fs';
import { decodeTime } from 'ulid';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { validateEvent, type EventRecord, type EventType } from '../../source/contracts/index.js';
import { appendEvent, onEvent, readEvents, StoreError } from '../../source/store/index.js';
import { cleanupFixtures, makeGarden, readLog } from '../helpers/fixtures.js';

afterEach(cleanupFixtures);

const NOW = new Date('2024-05-01T12:00:00.000Z');

async function storeError(promise: Promise<unknown>, code: string): Promise<StoreError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe(code);
    return error as StoreError;
  }
  return expect.fail(`expected StoreError ${code}`);
}

describe('appendEvent', () => {
  it('appends one validated JSON line with ts defaulting to now, creating the log', async () => {
    const { paths } = makeGarden();
    expect(fs.existsSync(paths.coordinatorLog)).toBe(false);
    const event = await appendEvent(paths, { type: 'GoalSubmitted', goal: '1-a', detail: 'build' }, NOW);
    expect(event).toEqual({ id: expect.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/), ts: NOW.toISOString(), type: 'GoalSubmitted', goal: '1-a', detail: 'build' });
    // The id's time is the event's time (a ULID's first 10 characters).
    expect(decodeTime(event.id!)).toBe(NOW.getTime());
    const text = fs.readFileSync(paths.coordinatorLog, 'utf8');
    expect(text).toBe(`${JSON.stringify(event)}\n`);
    expect(validateEvent(JSON.parse(text))).toEqual([]);
  });

  it('keeps an explicit ts', async () => {
    const { paths } = makeGarden();
    const event = await appendEvent(paths, { type: 'CoordinatorStarted', ts: '2020-01-01T00:00:00Z' }, NOW);
    expect(event.ts).toBe('2020-01-01T00:00:00Z');
  });

  it('an explicitly undefined ts still defaults to now', async () => {
    const { paths } = makeGarden();
    const event = await appendEvent(paths, { type: 'CoordinatorStarted', ts: undefined }, NOW);
    expect(event.ts).toBe(NOW.toISOString());
    expect(readLog(paths)).toEqual([{ id: event.id, ts: NOW.toISOString(), type: 'CoordinatorStarted' }]);
  });

  it('uses the current time when no clock is given', async () => {
    const { paths } = makeGarden();
    const before = Date.now();
    const event = await appendEvent(paths, { type: 'CoordinatorStopped' });
    const after = Date.now();
    expect(Date.parse(event.ts)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(event.ts)).toBeLessThanOrEqual(after);
  });

  it.each([
    ['an unknown type', { type: 'Bogus' as EventType }, 'INVALID_EVENT_TYPE'],
    ['a bad goal id', { type: 'GoalSubmitted' as EventType, goal: 'no-number' }, 'INVALID_GOAL_FORMAT'],
    ['a bad run id', { type: 'RunStarted' as EventType, run: '1-a' }, 'INVALID_ID_FORMAT'],
    ['a bad plant', { type: 'PlantArchived' as EventType, plant: '../evil' }, 'INVALID_PLANT_NAME'],
    ['a bad ts', { type: 'GoalSubmitted' as EventType, ts: 'yesterday' }, 'INVALID_TIMESTAMP'],
  ])('INVALID_RECORD for %s, writing nothing', async (_label, input, code) => {
    const { paths } = makeGarden();
    const error = await storeError(appendEvent(paths, input, NOW), 'INVALID_RECORD');
    expect(error.message).toContain(code);
    expect(error.file).toBe(paths.coordinatorLog);
    expect(fs.existsSync(paths.coordinatorLog)).toBe(false);
  });

  it('IO_ERROR when the log cannot be written', async () => {
    const { paths } = makeGarden();
    fs.mkdirSync(paths.coordinatorLog, { recursive: true }); // a directory where the file should be
    const error = await storeError(appendEvent(paths, { type: 'CoordinatorStarted' }, NOW), 'IO_ERROR');
    expect(error.message).toContain(paths.coordinatorLog);
  });

  it('concurrent appends each land on their own line', async () => {
    const { paths } = makeGarden();
    await Promise.all(Array.from({ length: 50 }, (_, i) => appendEvent(paths, { type: 'GoalSubmitted', goal: `${i + 1}-g`, detail: 'x'.repeat(500) }, NOW)));
    const { events, errors } = await readEvents(paths);
    expect(errors).toEqual([]);
    expect(events.map((e) => e.goal).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `${i + 1}-g`).sort());
  });

  it('tells listeners of each event until they unsubscribe', async () => {
    const { paths } = makeGarden();
    const listener = vi.fn<(event: EventRecord) => void>();
    const unsubscribe = onEvent(listener);
    const first = await appendEvent(paths, { type: 'CoordinatorStarted' }, NOW);
    unsubscribe();
    await appendEvent(paths, { type: 'CoordinatorStopped' }, NOW);
    expect(listener).toHaveBeenCalledTimes(1);
    expect(listener).toHaveBeenCalledWith(first);
  });

  it('does not tell listeners of a refused event', async () => {
    const { paths } = makeGarden();
    const listener = vi.fn();
    const unsubscribe = onEvent(listener);
    await storeError(appendEvent(paths, { type: 'Nope' as EventType }, NOW), 'INVALID_RECORD');
    unsubscribe();
    expect(listener).not.toHaveBeenCalled();
  });
});

describe('readEvents', () => {
  it('is empty for a missing log and returns the offset it was given', async () => {
    const { paths } = makeGarden();
    expect(await readEvents(paths)).toEqual({ events: [], errors: [], offset: 0 });
    expect(await readEvents(paths, 17)).toEqual({ events: [], errors: [], offset: 17 });
  });

  it('reads the whole log, then only what was appended since an offset', async () => {
    const { paths } = makeGarden();
    const a = await appendEvent(paths, { type: 'GoalSubmitted', goal: '1-a' }, NOW);
    const b = await appendEvent(paths, { type: 'GoalSubmitted', goal: '2-b' }, NOW);
    const all = await readEvents(paths);
    expect(all.events).toEqual([a, b]);
    expect(all.errors).toEqual([]);
    expect(all.offset).toBe(fs.statSync(paths.coordinatorLog).size);

    expect(await readEvents(paths, all.offset)).toEqual({ events: [], errors: [], offset: all.offset });

    const c = await appendEvent(paths, { type: 'GoalClosed', goal: '1-a', reason: 'success' }, NOW);
    const next = await readEvents(paths, all.offset);
    expect(next.events).toEqual([c]);
    expect(next.offset).toBe(fs.statSync(paths.coordinatorLog).size);
  });

  it('leaves a partial last line for the next read', async () => {
    const { paths } = makeGarden();
    const a = await appendEvent(paths, { type: 'CoordinatorStarted' }, NOW);
    const partial = JSON.stringify({ ts: NOW.toISOString(), type: 'GoalSubmitted', goal: '3-c' });
    fs.appendFileSync(paths.coordinatorLog, partial.slice(0, 20));

    const first = await readEvents(paths);
    expect(first.events).toEqual([a]);
    expect(first.errors).toEqual([]);
    expect(first.offset).toBe(Buffer.byteLength(`${JSON.stringify(a)}\n`));

    const again = await readEvents(paths, first.offset);
    expect(again).toEqual({ events: [], errors: [], offset: first.offset });

    fs.appendFileSync(paths.coordinatorLog, `${partial.slice(20)}\n`);
    const second = await readEvents(paths, first.offset);
    expect(second.errors).toEqual([]);
    expect(second.events).toEqual([JSON.parse(partial)]);
    expect(second.offset).toBe(fs.statSync(paths.coordinatorLog).size);
  });

  it('does not split a multi-byte character of a partial line', async () => {
    const { paths } = makeGarden();
    const full = `${JSON.stringify({ ts: NOW.toISOString(), type: 'GoalSubmitted', goal: '1-a', detail: '修复 🎉' })}\n`;
    const bytes = Buffer.from(full, 'utf8');
    const cut = bytes.indexOf(Buffer.from('🎉', 'utf8')) + 2; // inside the emoji
    fs.mkdirSync(paths.eventsDir, { recursive: true });
    fs.writeFileSync(paths.coordinatorLog, bytes.subarray(0, cut));
    const first = await readEvents(paths);
    expect(first).toEqual({ events: [], errors: [], offset: 0 });
    fs.appendFileSync(paths.coordinatorLog, bytes.subarray(cut));
    const second = await readEvents(paths, first.offset);
    expect(second.events).toEqual([JSON.parse(full)]);
    expect(second.offset).toBe(bytes.length);
  });

  it('reports malformed lines with the file and line, and keeps the valid events', async () => {
    const { paths } = makeGarden();
    const a = await appendEvent(paths, { type: 'CoordinatorStarted' }, NOW);
    fs.appendFileSync(paths.coordinatorLog, '{ this is not json\n');
    fs.appendFileSync(paths.coordinatorLog, `${JSON.stringify({ ts: NOW.toISOString(), type: 'Bogus' })}\n`);
    fs.appendFileSync(paths.coordinatorLog, '\n');
    const b = await appendEvent(paths, { type: 'CoordinatorStopped' }, NOW);
    const read = await readEvents(paths);
    expect(read.events).toEqual([a, b]);
    expect(read.errors).toHaveLength(2);
    expect(read.errors[0]).toContain(paths.coordinatorLog);
    expect(read.errors[0]).toMatch(/line 2\b/);
    expect(read.errors[0]).toContain('malformed JSON');
    expect(read.errors[1]).toMatch(/line 3\b/);
    expect(read.errors[1]).toContain('INVALID_EVENT_TYPE');
    expect(read.offset).toBe(fs.statSync(paths.coordinatorLog).size);
  });

  it('an offset past the end of the log reads nothing', async () => {
    const { paths } = makeGarden();
    await appendEvent(paths, { type: 'CoordinatorStarted' }, NOW);
    const size = fs.statSync(paths.coordinatorLog).size;
    const read = await readEvents(paths, size + 100);
    expect(read.events).toEqual([]);
    expect(read.errors).toEqual([]);
  });
});
