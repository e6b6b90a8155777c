/** `pak2 events`: catch-up after a cursor, filters, follow, bad input (issue 11, item 3). */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { appendEvent, findEventsAfter, streamEvents } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

let garden: (Garden & { cleanup: () => void }) | undefined;
afterEach(() => garden?.cleanup());

describe('pak2 events', () => {
  it('--since ID prints exactly the events after it, in order, found by seeking in a large log', async () => {
    garden = await makeTestGarden();
    const ids: string[] = [];
    for (let i = 0; i < 3000; i += 1) ids.push((await appendEvent(garden.paths, { type: 'GardenGenesis', detail: `event ${i} ${'x'.repeat(200)}` })).id!);
    expect([...ids].sort()).toEqual(ids);
    const cursor = ids[2500]!;
    const { offset, exact } = await findEventsAfter(garden.paths, cursor);
    expect(exact).toBe(true);
    const after: string[] = [];
    await streamEvents(garden.paths, offset, (e) => void after.push(e.id!));
    expect(after).toEqual(ids.slice(2501));
    const result = await runCli(['events', '--since', cursor, '--json', '--garden', garden.paths.gardenRoot]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id)).toEqual(ids.slice(2501));
  });

  it('an old line without an id is still read beside lines that have one', async () => {
    garden = await makeTestGarden();
    const { appendJsonLine } = await import('../../source/store/index.js');
    await appendJsonLine(garden.paths.coordinatorLog, { ts: '2026-01-01T00:00:00.000Z', type: 'GardenGenesis', detail: 'before ids' });
    const later = await appendEvent(garden.paths, { type: 'GardenGenesis', detail: 'with an id' });
    const result = await runCli(['events', '--json', '--garden', garden.paths.gardenRoot]);
    expect(result.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { detail: string }).detail).slice(-2)).toEqual(['before ids', 'with an id']);
    expect(later.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('--type and --goal filter; --follow prints events written later by another process', async () => {
    garden = await makeTestGarden();
    const g = garden;
    await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '1-a' });
    await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '2-b' });
    await appendEvent(g.paths, { type: 'RunStarted', goal: '1-a', run: '1-a-r1' });
    const filtered = await runCli(['events', '--goal', '1-a', '--type', 'RunStarted', '--garden', g.paths.gardenRoot]);
    expect(filtered.stdout.trim().split('\n')).toHaveLength(1);
    expect(filtered.stdout).toContain('RunStarted');
    const follow = spawn(process.execPath, [PAK2_BIN, 'events', '--follow', '--type', 'GoalSubmitted', '--garden', g.paths.gardenRoot], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    follow.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => follow.once('close', (code) => r(code)));
    await waitFor(() => out.includes('2-b'), 10_000);
    const submitted = await runCli(['submit', '--garden', g.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'while following']);
    await waitFor(() => out.includes(submitted.stdout.trim()), 10_000);
    follow.kill('SIGINT');
    expect(await exited).toBe(0);
  });

  it('--type takes types separated by commas, as ?type= and a webhook --events do (issue 28)', async () => {
    garden = await makeTestGarden();
    const g = garden;
    await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '1-a' });
    await appendEvent(g.paths, { type: 'GardenGenesis' });
    await appendEvent(g.paths, { type: 'RunStarted', goal: '1-a', run: '1-a-r1' });
    const types = async (...args: string[]) => {
      const result = await runCli(['events', '--json', ...args, '--garden', g.paths.gardenRoot]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      return result.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { type: string }).type);
    };
    expect(await types('--type', 'GoalSubmitted,RunStarted')).toEqual(['GoalSubmitted', 'RunStarted']);
    expect(await types('--type', 'RunStarted, GoalSubmitted')).toEqual(['GoalSubmitted', 'RunStarted']);
    expect(await types('--type', 'GoalSubmitted', '--type', 'RunStarted,GoalSubmitted')).toEqual(['GoalSubmitted', 'RunStarted']);
  });

  it.each([
    [['--since', 'yesterday'], '--since yesterday: not an event id'],
    [['--type', 'Nope'], '--type Nope: not an event type'],
    [['--type', 'GoalSubmitted,Nope'], '--type Nope: not an event type'],
  ])('%j: one-line error naming the flag, exit 2', async (args, message) => {
    garden = await makeTestGarden();
    const result = await runCli(['events', ...args, '--garden', garden.paths.gardenRoot]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });
});
