/**
 * One garden, many processes (docs/store/level2.md, "Many processes, one
 * garden"): on a garden whose state is in a store, any number of
 * coordinators and servers share it, and the duties that must happen once —
 * lease expiry, automatic tends for stuck goals, schedules, landing, the
 * blocked report, webhook delivery — are done by one of them, the leader.
 * The leader is chosen through the database: the `leader` duty row, held
 * for {@link LEADER_TTL_SECONDS} and renewed every third of it; when its
 * holder dies the row expires and the next claimer takes it, so failover
 * is bounded by the TTL plus one renewal period. A garden on the files
 * has one coordinator (its lock), which is always the leader.
 */
import os from 'node:os';
import { ulid } from 'ulid';
import type { Garden } from '../garden/index.js';
import { storeOf, type GardenStore } from '../store/index.js';

/** How long a leader holds the duty without renewing it, seconds (`PAK2_LEADER_TTL_SECONDS` overrides, for tests and tuning). */
export const LEADER_TTL_SECONDS = 15;

/** The leader duty's TTL for this process, seconds. */
export function leaderTtlSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.PAK2_LEADER_TTL_SECONDS);
  return Number.isFinite(value) && value >= 1 ? value : LEADER_TTL_SECONDS;
}

/** A process's name in the duty rows and leases: `<role>@<host>#<pid>-<ulid>` (unique per start). */
export function processHolderId(role: string): string {
  return `${role}@${os.hostname()}#${process.pid}-${ulid()}`;
}

/**
 * Whether this process is the garden's leader, kept current by a timer.
 * `onChange(leader)` is told when it becomes or stops being the leader.
 */
export class Leadership {
  readonly holder: string;
  private readonly store: GardenStore | undefined;
  private leaderValue: boolean;
  private term = 0;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    garden: Garden,
    role: string,
    private readonly onChange: (leader: boolean, term: number) => void = () => undefined,
    private readonly ttlSeconds = leaderTtlSeconds(),
  ) {
    this.store = storeOf(garden.paths);
    this.holder = processHolderId(role);
    // The files' single coordinator leads alone.
    this.leaderValue = !this.store;
  }

  /** True when this process does the once-per-garden duties now. */
  get leader(): boolean {
    return this.leaderValue;
  }

  /** True on a garden shared through a store (several coordinators may run). */
  get shared(): boolean {
    return Boolean(this.store);
  }

  /** Claims the duty now and keeps renewing it (nothing on a file garden). */
  async start(): Promise<void> {
    if (!this.store) return;
    await this.renew();
    this.timer = setInterval(() => void this.renew(), Math.max(250, (this.ttlSeconds * 1000) / 3));
    this.timer.unref();
  }

  /** Claims or renews; a store that cannot be reached means not leading (another process may take over after the TTL). */
  renew(): Promise<void> {
    if (!this.store || this.stopped) return Promise.resolve();
    this.renewing ??= (async () => {
      let leader = false;
      try {
        const claim = await this.store!.claimDuty('leader', this.holder, this.ttlSeconds);
        leader = claim.held;
        this.term = claim.term;
      } catch {
        leader = false;
      }
      if (this.stopped) return;
      if (leader !== this.leaderValue) {
        this.leaderValue = leader;
        this.onChange(leader, this.term);
      }
    })().finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  /** Stops renewing and gives the duty up, so another process takes it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.renewing;
    if (this.store && this.leaderValue) await this.store.releaseDuty('leader', this.holder).catch(() => undefined);
    this.leaderValue = !this.store;
  }
}

/**
 * Takes duty `duty` for this process on a garden shared through a store
 * (e.g. webhook delivery: one deliverer per garden), renewing it every third
 * of its TTL until released. When a renewal finds it taken (this process
 * was cut off past the TTL), `onLost` is told once and renewing stops.
 *
 * @returns the release, or undefined when another live process holds the duty.
 */
export async function takeDuty(garden: Garden, duty: string, role: string, onLost: () => void, ttlSeconds = leaderTtlSeconds()): Promise<(() => Promise<void>) | undefined> {
  const store = storeOf(garden.paths);
  if (!store) return async () => undefined;
  const holder = processHolderId(role);
  const first = await store.claimDuty(duty, holder, ttlSeconds);
  if (!first.held) return undefined;
  let lost = false;
  const timer = setInterval(() => {
    void store.claimDuty(duty, holder, ttlSeconds).then(
      (claim) => {
        if (claim.held || lost) return;
        lost = true;
        clearInterval(timer);
        onLost();
      },
      () => undefined,
    );
  }, Math.max(250, (ttlSeconds * 1000) / 3));
  timer.unref();
  return async () => {
    clearInterval(timer);
    if (!lost) await store.releaseDuty(duty, holder).catch(() => undefined);
  };
}
