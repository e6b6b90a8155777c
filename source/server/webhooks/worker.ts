import fsp from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import lockfile from 'proper-lockfile';
import { takeDuty } from '../../coordinator/leader.js';
import { storeOf } from '../../store/index.js';
import type { EventRecord } from '../../contracts/index.js';
import { reloadConfig, type Garden } from '../../garden/index.js';
import { PACKAGE_VERSION } from '../../package-root.js';
import { eventKey, findEventsAfter } from '../../store/index.js';
import { scanEvents, type LogTail } from '../log-tail.js';
import { signDelivery, WEBHOOK_HEADERS } from './sign.js';
import { checkWebhookAddress } from './target.js';
import {
  ALL_EVENTS,
  appendDelivery,
  readSecret,
  readSubscriptions,
  subscriptionsStamp,
  updateSubscription,
  webhookPaths,
  type DeliveryRecord,
  type Subscription,
} from './store.js';

/** Webhook health as the status line and `/api/v1` report it. */
export interface WebhookHealth {
  /** False when another `pak2 serve` of this garden holds the delivery worker (it delivers; this one does not). */
  running: boolean;
  subscriptions: number;
  /** Subscriptions that gave up on an event and have not delivered one since. */
  failing: number;
  /** Subscriptions waiting to retry an event. */
  retrying: number;
}

/** Options of {@link WebhookWorker}; the delays are for tests and the bench, the defaults for everyone else. */
export interface WebhookWorkerOptions {
  garden: Garden;
  /** Wakes the worker when the event log grows. */
  tail: LogTail;
  /** The first retry's delay; each further one doubles it. Default 1000 ms. */
  baseDelayMs?: number;
  /** The longest delay between attempts. Default 5 minutes. */
  maxDelayMs?: number;
  /** Attempts at one event before the subscription gives up on it. Default 8. */
  maxAttempts?: number;
  /** How long one POST may take. Default 10 s. */
  timeoutMs?: number;
  /** Up to this fraction is added to each delay at random. Default 0.25. */
  jitter?: number;
  random?: () => number;
  /** How often subscriptions.json is checked for added or removed subscriptions. Default 1000 ms. */
  reloadMs?: number;
  /** How long a POST in flight at stop may finish before it is aborted. Default 2000 ms. */
  stopGraceMs?: number;
  /** Told whenever the health changes. */
  onChange?: (health: WebhookHealth) => void;
  /** One-line notices (a subscription gave up on an event, a worker error). */
  onNotice?: (line: string) => void;
}

interface Loop {
  id: string;
  /** Where the scan for the next event stands: the offset after `cursor` or after events that did not match. */
  scan: { cursor: string | null | undefined; offset: number };
  wake: (() => void) | undefined;
  done: Promise<void> | undefined;
  inFlight: AbortController | undefined;
}

/**
 * Delivers events to webhook subscriptions (docs/server/level2.md): for
 * each subscription, the events after its cursor that match its filter, in
 * order, one signed POST each. A failure is retried with exponential backoff
 * and jitter up to `maxAttempts`; then the subscription is marked `failing`,
 * a `gave_up` record written and the cursor moved past the event. Every
 * attempt is a line of deliveries.jsonl, and the cursor and retry state are
 * written to subscriptions.json before the next event: a restart resumes
 * from them, nothing is queued only in memory. One worker per garden (a lock
 * in the webhooks directory).
 */
export class WebhookWorker {
  private readonly subs = new Map<string, Subscription>();
  private readonly loops = new Map<string, Loop>();
  private stopping = false;
  private running = false;
  private release: (() => Promise<void>) | undefined;
  private reloadTimer: NodeJS.Timeout | undefined;
  private lockTimer: NodeJS.Timeout | undefined;
  private stamp = -1;
  private reloading: Promise<void> | undefined;
  private readonly retired: Promise<void>[] = [];

  constructor(private readonly options: WebhookWorkerOptions) {}

  /**
   * Takes the worker lock and starts delivering. When another process holds
   * it, says so once and tries again every few seconds (a crashed holder's
   * lock goes stale after 10 s), so deliveries never stop for good.
   *
   * @returns whether this worker delivers now.
   */
  async start(): Promise<boolean> {
    const dir = webhookPaths(this.options.garden.paths).dir;
    await fsp.mkdir(dir, { recursive: true });
    if (await this.lock(dir)) return true;
    this.notice('webhooks: another pak2 process of this garden (serve, cycle or the workbench) delivers them (webhooks/worker.lock is held); this one takes over if it stops');
    this.changed();
    this.lockTimer = setInterval(() => {
      void this.lock(dir).then((ok) => {
        if (ok && this.lockTimer) clearInterval(this.lockTimer);
      });
    }, 3000);
    this.lockTimer.unref();
    return false;
  }

  private async lock(dir: string): Promise<boolean> {
    if (this.stopping || this.running) return this.running;
    if (storeOf(this.options.garden.paths)) {
      // A garden shared through a store: one deliverer among every server and coordinator, chosen through the database.
      const release = await takeDuty(this.options.garden, 'webhook-delivery', 'webhooks', () => {
        this.notice('webhooks: another pak2 process took over delivering them; deliveries stop here');
        void this.stop();
      }).catch(() => undefined);
      if (!release) return false;
      this.release = release;
      return this.begin();
    }
    try {
      // The target is a name of its own: proper-lockfile keys its locks by target, and subscriptions.json's lock targets the directory.
      this.release = await lockfile.lock(path.join(dir, 'worker'), {
        realpath: false,
        lockfilePath: path.join(dir, 'worker.lock'),
        stale: 10_000,
        onCompromised: () => this.notice('webhooks: the worker lock was lost (another pak2 process took it); deliveries stop here'),
      });
    } catch {
      return false;
    }
    return this.begin();
  }

  /** Starts delivering, holding the lock or duty. */
  private async begin(): Promise<boolean> {
    if (this.stopping) {
      await this.release?.().catch(() => undefined);
      return false;
    }
    this.running = true;
    await this.reload();
    this.reloadTimer = setInterval(() => void this.reload(), this.options.reloadMs ?? 1000);
    this.reloadTimer.unref();
    return true;
  }

  /** Stops: wakes every loop, lets a POST in flight finish (up to the grace), releases the lock. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.reloadTimer) clearInterval(this.reloadTimer);
    if (this.lockTimer) clearInterval(this.lockTimer);
    await this.reloading;
    const grace = setTimeout(() => {
      for (const loop of this.loops.values()) loop.inFlight?.abort();
    }, this.options.stopGraceMs ?? 2000);
    for (const loop of this.loops.values()) loop.wake?.();
    await Promise.all([...[...this.loops.values()].map((l) => l.done), ...this.retired]);
    clearTimeout(grace);
    await this.release?.().catch(() => undefined);
    this.running = false;
  }

  /** The current health. */
  health(): WebhookHealth {
    const subs = [...this.subs.values()];
    return { running: this.running, subscriptions: subs.length, failing: subs.filter((s) => s.status === 'failing').length, retrying: subs.filter((s) => s.retry).length };
  }

  private changed(): void {
    this.options.onChange?.(this.health());
  }

  private notice(line: string): void {
    this.options.onNotice?.(line);
  }

  /** Re-reads subscriptions.json when it changed: starts loops for new subscriptions, ends those of removed ones. */
  private reload(): Promise<void> {
    this.reloading ??= (async () => {
      const { paths } = this.options.garden;
      const stamp = subscriptionsStamp(paths);
      if (stamp === this.stamp || this.stopping) return;
      let subs: Subscription[];
      try {
        subs = await readSubscriptions(paths);
      } catch (error) {
        this.notice(`webhooks: ${(error as Error).message}`);
        return;
      }
      this.stamp = stamp;
      const ids = new Set(subs.map((s) => s.id));
      // Only membership comes from the file: the delivery state of a known subscription is this worker's own
      // (it alone writes it, under the worker lock), and a read racing its write must not roll it back.
      for (const sub of subs) if (!this.subs.has(sub.id)) this.subs.set(sub.id, sub);
      for (const [id, loop] of this.loops) {
        if (ids.has(id)) continue;
        this.subs.delete(id);
        this.loops.delete(id);
        loop.wake?.();
        if (loop.done) this.retired.push(loop.done);
      }
      for (const sub of subs) {
        if (this.loops.has(sub.id) || this.stopping) continue;
        const loop: Loop = { id: sub.id, scan: { cursor: undefined, offset: 0 }, wake: undefined, done: undefined, inFlight: undefined };
        this.loops.set(sub.id, loop);
        loop.done = this.run(loop);
      }
      this.changed();
    })().finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  private sleep(loop: Loop, ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        loop.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      loop.wake = done;
    });
  }

  private alive(loop: Loop): boolean {
    return !this.stopping && this.loops.get(loop.id) === loop;
  }

  private async run(loop: Loop): Promise<void> {
    while (this.alive(loop)) {
      const sub = this.subs.get(loop.id);
      if (!sub) return;
      try {
        if (sub.retry) {
          // The persisted next retry holds across restarts.
          const wait = Date.parse(sub.retry.next_at) - Date.now();
          if (wait > 0) {
            await this.sleep(loop, wait);
            continue;
          }
        }
        const version = this.options.tail.version;
        const next = await this.nextEvent(sub, loop);
        if (!this.alive(loop)) return;
        if (!next) {
          await this.options.tail.changedSince(version, 5000, { onWake: (wake) => (loop.wake = wake) });
          loop.wake = undefined;
          continue;
        }
        await this.deliver(sub, next.event, next.end, loop);
      } catch (error) {
        this.notice(`webhook ${loop.id}: ${(error as Error).message}`);
        await this.sleep(loop, 1000);
      }
    }
  }

  /** The first event after the subscription's cursor that its filter takes. */
  private async nextEvent(sub: Subscription, loop: Loop): Promise<{ event: EventRecord; end: number } | undefined> {
    const { paths } = this.options.garden;
    if (loop.scan.cursor !== sub.cursor) loop.scan = { cursor: sub.cursor, offset: sub.cursor ? (await findEventsAfter(paths, sub.cursor)).offset : 0 };
    const all = sub.events.includes(ALL_EVENTS);
    let found: { event: EventRecord; end: number } | undefined;
    const end = await scanEvents(paths, loop.scan.offset, (event, at) => {
      if (all || (sub.events as string[]).includes(event.type)) {
        found = { event, end: at };
        return true;
      }
      loop.scan.offset = at;
      return false;
    });
    if (!found) loop.scan.offset = end;
    return found;
  }

  /** The delay before attempt `attempt + 1`: base × 2^(attempt−1), capped, plus up to `jitter` of it at random. */
  private backoff(attempt: number): number {
    const base = this.options.baseDelayMs ?? 1000;
    const capped = Math.min(this.options.maxDelayMs ?? 300_000, base * 2 ** (attempt - 1));
    return Math.round(capped * (1 + (this.options.jitter ?? 0.25) * (this.options.random ?? Math.random)()));
  }

  private async deliver(sub: Subscription, event: EventRecord, end: number, loop: Loop): Promise<void> {
    const { paths } = this.options.garden;
    const key = eventKey(event);
    const attempt = sub.retry?.event === key ? sub.retry.attempt + 1 : 1;
    loop.inFlight = new AbortController();
    let posted: PostOutcome;
    try {
      posted = await postEvent(this.options.garden, sub, event, attempt, { timeoutMs: this.options.timeoutMs ?? 10_000, signal: loop.inFlight.signal });
    } finally {
      loop.inFlight = undefined;
    }
    const { status, error } = posted;
    const latency = posted.latencyMs;
    const now = new Date();
    const ok = error === null;
    // A subscription already failing gives each later event one try: a dead receiver costs one attempt an event, not hours of backoff each.
    const giveUp = !ok && (attempt >= (this.options.maxAttempts ?? 8) || sub.status === 'failing');
    const nextAt = ok || giveUp ? null : new Date(now.getTime() + this.backoff(attempt)).toISOString();
    const outcome: DeliveryRecord['outcome'] = ok ? 'delivered' : giveUp ? 'gave_up' : 'retry';
    await appendDelivery(paths, { ts: now.toISOString(), subscription: sub.id, url: sub.url, event: key, event_type: event.type, attempt, status_code: status, latency_ms: latency, outcome, next_retry_at: nextAt, error });
    const last = { at: now.toISOString(), event: key, status_code: status, outcome };
    const updated = await updateSubscription(paths, sub.id, (s) =>
      outcome === 'retry'
        ? { ...s, retry: { event: key, attempt, next_at: nextAt!, last_status: status, last_error: error }, last_attempt: last }
        : {
            ...s,
            cursor: key,
            retry: null,
            status: ok ? 'active' : 'failing',
            delivered: s.delivered + (ok ? 1 : 0),
            gave_up: s.gave_up + (ok ? 0 : 1),
            last_attempt: last,
          },
    );
    if (!updated) return;
    this.subs.set(sub.id, updated);
    // Past the event: the next scan starts right after it, without a seek.
    if (outcome !== 'retry') loop.scan = { cursor: key, offset: end };
    // Said once as it starts failing; the events given up on after it are in the delivery log (pak2 webhook redeliver resends them).
    if (giveUp && sub.status !== 'failing') this.notice(`webhook ${sub.id} is failing: gave up on event ${key} (${event.type}) after ${attempt} attempts (${error}); moving on, one try an event until one is delivered`);
    if (outcome !== 'delivered' || sub.status !== updated.status || Boolean(sub.retry) !== Boolean(updated.retry)) this.changed();
  }
}

/** What one POST of an event came to: the receiver's status (null: no answer), the error (null: 2xx), the time it took. */
export interface PostOutcome {
  status: number | null;
  error: string | null;
  latencyMs: number;
}

/**
 * POSTs one event to a subscription, signed with its secret
 * (docs/server/level2.md, "Webhooks"): the worker's attempts and `pak2
 * webhook redeliver` both go through here. The target is checked first
 * ({@link checkWebhookAddress}): a refused one is an error with no POST
 * made. Redirects are not followed. Never throws.
 */
export async function postEvent(garden: Garden, sub: Subscription, event: EventRecord, attempt: number, options: { timeoutMs: number; signal?: AbortSignal }): Promise<PostOutcome> {
  // [webhooks] as PAK2.toml says now (live: docs/garden/level2.md).
  reloadConfig(garden);
  const { paths, config } = garden;
  const key = eventKey(event);
  const body = JSON.stringify({ subscription: sub.id, garden: config.gardenName, event });
  const timestamp = Math.floor(Date.now() / 1000);
  let status: number | null = null;
  let error: string | null = null;
  const started = performance.now();
  try {
    const refused = await checkWebhookAddress(new URL(sub.url), config.webhooks, `webhook ${sub.id}`);
    if (refused) return { status: null, error: `refused: ${refused}`, latencyMs: 0 };
    const secret = await readSecret(paths, sub.id);
    const signal = AbortSignal.any([...(options.signal ? [options.signal] : []), AbortSignal.timeout(options.timeoutMs)]);
    const response = await fetch(sub.url, {
      method: 'POST',
      redirect: 'manual',
      signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': `pak2/${PACKAGE_VERSION}`,
        [WEBHOOK_HEADERS.eventId]: key,
        [WEBHOOK_HEADERS.eventType]: event.type,
        [WEBHOOK_HEADERS.subscription]: sub.id,
        [WEBHOOK_HEADERS.attempt]: String(attempt),
        [WEBHOOK_HEADERS.timestamp]: String(timestamp),
        [WEBHOOK_HEADERS.signature]: signDelivery(secret, timestamp, body),
      },
      body,
    });
    status = response.status;
    await response.body?.cancel().catch(() => undefined);
    if (status < 200 || status >= 300) error = `HTTP ${status}`;
  } catch (caught) {
    const reason = (caught as Error & { cause?: Error }).cause ?? caught;
    error = (reason as Error).name === 'TimeoutError' ? `no answer within ${options.timeoutMs} ms` : (reason as Error).message || String(reason);
  }
  return { status, error, latencyMs: Math.round(performance.now() - started) };
}
