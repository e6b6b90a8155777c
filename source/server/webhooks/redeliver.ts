import type { EventRecord } from '../../contracts/index.js';
import type { Garden } from '../../garden/index.js';
import { UserError } from '../../errors.js';
import { eventKey, isEventId } from '../../store/index.js';
import { scanEvents } from '../log-tail.js';
import { appendDelivery, readDeliveries, readSubscriptions, updateSubscription, type DeliveryRecord } from './store.js';
import { postEvent } from './worker.js';

/**
 * The events a subscription gave up on and has not delivered since, oldest
 * first (from deliveries.jsonl: a `gave_up` line with no later `delivered`
 * line for the same event).
 */
export function givenUpEvents(records: DeliveryRecord[], subscription: string): string[] {
  const open = new Map<string, true>();
  for (const r of records) {
    if (r.subscription !== subscription) continue;
    if (r.outcome === 'gave_up') open.set(r.event, true);
    else if (r.outcome === 'delivered') open.delete(r.event);
  }
  return [...open.keys()];
}

/** One event's redelivery: the record written to deliveries.jsonl. */
export interface Redelivery {
  event: string;
  record: DeliveryRecord;
}

/**
 * `pak2 webhook redeliver` (docs/server/level2.md, "Webhooks"): POSTs
 * again, once each, the events a subscription gave up on (or the ones
 * named), signed as the worker signs, and writes each attempt to
 * deliveries.jsonl (`delivered`, or `gave_up` again). The subscription's
 * cursor is not moved; a delivered one counts in `delivered` and makes a
 * failing subscription `active`.
 *
 * @throws UserError for an unknown subscription, an event id that is not
 *   one, or a named event that is not in the log.
 */
export async function redeliver(garden: Garden, id: string, options: { events?: string[]; timeoutMs?: number } = {}): Promise<Redelivery[]> {
  const { paths } = garden;
  const sub = (await readSubscriptions(paths)).find((s) => s.id === id);
  if (!sub) throw new UserError(`ID ${id}: no such webhook (pak2 webhook list shows them)`);
  for (const key of options.events ?? []) if (!isEventId(key)) throw new UserError(`--event ${key}: not an event id (a ULID, as pak2 webhook deliveries shows)`);
  const history = await readDeliveries(paths, { subscription: id });
  const wanted = options.events?.length ? [...new Set(options.events)] : givenUpEvents(history, id);
  if (wanted.length === 0) return [];
  const found = new Map<string, EventRecord>();
  const last = [...wanted].sort().at(-1)!;
  await scanEvents(paths, 0, (event) => {
    const key = eventKey(event);
    if (wanted.includes(key)) found.set(key, event);
    return found.size === wanted.length || key > last;
  });
  const missing = wanted.filter((key) => !found.has(key));
  if (missing.length) throw new UserError(`--event ${missing[0]}: no such event in the log`);
  const out: Redelivery[] = [];
  for (const key of wanted) {
    const event = found.get(key)!;
    const attempt = history.filter((r) => r.event === key).length + 1;
    const posted = await postEvent(garden, sub, event, attempt, { timeoutMs: options.timeoutMs ?? 10_000 });
    const ok = posted.error === null;
    const record: DeliveryRecord = {
      ts: new Date().toISOString(),
      subscription: id,
      url: sub.url,
      event: key,
      event_type: event.type,
      attempt,
      status_code: posted.status,
      latency_ms: posted.latencyMs,
      outcome: ok ? 'delivered' : 'gave_up',
      next_retry_at: null,
      error: posted.error,
    };
    await appendDelivery(paths, record);
    if (ok) await updateSubscription(paths, id, (s) => ({ ...s, delivered: s.delivered + 1, ...(s.retry ? {} : { status: 'active' as const }) }));
    out.push({ event: key, record });
  }
  return out;
}
