/**
 * The lease keeper's watchdog (source/runner/keeper.ts): a silent agent is
 * killed with the garden's watchdog_seconds, but not while it waits on a
 * blocking question of its own; the silence clock starts again when the
 * answer is handed over.
 */
import { describe, expect, it } from 'vitest';
import type { RunHandle, StopDetail, StopReason } from '../../source/driver/launch.js';
import { RunLiveness } from '../../source/driver/liveness.js';
import type { Garden } from '../../source/garden/index.js';
import type { RunnerClient } from '../../source/runner/client.js';
import { heartbeatPeriodMs, LeaseKeeper } from '../../source/runner/keeper.js';
import { RunnerApiError } from '../../source/runner/client.js';
import type { OutboxRelay } from '../../source/runner/outbox.js';
import type { LogUploader } from '../../source/runner/uploader.js';
import { makeTempDir } from '../helpers/fixtures.js';

interface Rig {
  keeper: LeaseKeeper;
  stops: { reason: StopReason; detail?: StopDetail }[];
  lines: string[];
  setNow: (ms: number) => void;
  asking: { value: boolean };
  answers: { value: { id: string; answers: string }[] };
}

function rig(heartbeat?: () => Promise<unknown>): Rig {
  let now = 0;
  const asking = { value: false };
  const answers = { value: [] as { id: string; answers: string }[] };
  const stops: Rig['stops'] = [];
  const lines: string[] = [];
  const liveness = new RunLiveness(0);
  const handle = {
    pid: 1,
    mark: 'm',
    liveness,
    stopping: undefined as StopReason | undefined,
    stop(reason: StopReason, detail?: StopDetail) {
      if (this.stopping) return;
      this.stopping = reason;
      stops.push({ reason, ...(detail ? { detail } : {}) });
    },
  };
  const root = makeTempDir();
  const garden = { config: { coordinator: { watchdogSeconds: 2, toolSilenceSeconds: 10, runTimeoutSeconds: 3600 } }, paths: { runtimeRoot: root, eventsDir: `${root}/events` } } as unknown as Garden;
  const relay = {
    asking: () => asking.value,
    waiting: () => (asking.value ? [{ key: 'q1', comment: 'C1', body: 'Which branch?', blocking: true, posted_at: '' }] : []),
    post: async () => ({ posted: [], rejected: [] }),
    deliver: async (comments: { id: string; answers?: string }[]) => {
      const got = comments.filter((c) => c.answers === 'C1');
      if (got.length) asking.value = false;
      return got.map((c) => ({ key: 'q1', answer: c }));
    },
  } as unknown as OutboxRelay;
  const client = { heartbeat: heartbeat ?? (async () => ({ lease: {}, stop: null, answers: answers.value })) } as unknown as RunnerClient;
  const uploader = { flush: async () => undefined, localSizes: () => ({ events: 0, stderr: 0 }) } as unknown as LogUploader;
  const keeper = new LeaseKeeper({ client, garden, runId: '3-fix-r1', goalId: '3-fix', plant: 'gardener', lease: 'L', ttlSeconds: 600, uploader, relay, log: (l) => lines.push(l), startedAt: 0, now: () => now });
  keeper.setHandle(handle as unknown as RunHandle);
  return { keeper, stops, lines, setNow: (ms) => (now = ms), asking, answers };
}

describe('the keeper watchdog', () => {
  it('kills an agent silent past watchdog_seconds', async () => {
    const r = rig();
    r.setNow(1500);
    await r.keeper.tick();
    expect(r.stops).toEqual([]);
    r.setNow(2500);
    await r.keeper.tick();
    expect(r.stops).toMatchObject([{ reason: 'killed', detail: { watchdog: { limit: 'watchdog_seconds', limit_seconds: 2, silent_seconds: 2.5 } } }]);
  });

  it('leaves an agent waiting on its own question alone, and counts its silence from the answer’s hand-over', async () => {
    const r = rig();
    r.asking.value = true;
    for (const at of [1000, 5000, 30_000, 60_000]) {
      r.setNow(at);
      await r.keeper.tick();
    }
    expect(r.stops).toEqual([]);
    // The answer arrives with a heartbeat (every 2 s while a question waits) and is handed over at 62 s.
    r.answers.value = [{ id: 'A1', answers: 'C1' }];
    r.setNow(62_000);
    await r.keeper.tick();
    expect(r.asking.value).toBe(false);
    expect(r.lines.some((l) => l.includes('answer A1 to q1 handed to the agent'))).toBe(true);
    r.setNow(63_500);
    await r.keeper.tick();
    expect(r.stops).toEqual([]); // 1.5 s after the hand-over
    r.setNow(64_500);
    await r.keeper.tick();
    expect(r.stops).toMatchObject([{ reason: 'killed', detail: { watchdog: { silent_seconds: 2.5 } } }]);
  });
});

describe('the keeper heartbeat', () => {
  it('tries a heartbeat the server could not take (503: its store is down) again within a second, not a period later', async () => {
    const calls: number[] = [];
    let now = 0;
    let down = true;
    const r = rig(async () => {
      calls.push(now);
      if (down) throw new RunnerApiError('heartbeat', 'POST', 'http://127.0.0.1/runs/x/heartbeat', 503, { error: "the garden's store cannot be reached just now; try again shortly" });
      return { lease: {}, stop: null, answers: [] };
    });
    const period = heartbeatPeriodMs(600, false);
    const at = (ms: number) => {
      now = ms;
      r.setNow(ms);
    };
    at(period);
    await r.keeper.tick();
    expect(calls).toEqual([period]);
    expect(r.lines.at(-1)).toMatch(/503.*retrying/);
    at(period + 500);
    await r.keeper.tick();
    expect(calls).toHaveLength(1);
    down = false;
    at(period + 1000);
    await r.keeper.tick();
    expect(calls).toEqual([period, period + 1000]);
    // Delivered: the next one waits a whole period again.
    at(period + 2000);
    await r.keeper.tick();
    expect(calls).toHaveLength(2);
    at(2 * period + 1000);
    await r.keeper.tick();
    expect(calls).toHaveLength(3);
  });
});
