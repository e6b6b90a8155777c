/**
 * Store contract (issue 27): webhook subscriptions, their signing secrets
 * and the delivery log, the same on the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addSubscription, appendDelivery, readDeliveries, readSecret, readSubscriptions, removeSubscription, updateSubscription, type DeliveryRecord } from '../../../source/server/webhooks/store.js';
import { appendEvent } from '../../../source/store/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

function delivery(subscription: string, event: string, attempt: number): DeliveryRecord {
  return { ts: '2026-05-01T10:00:00.000Z', subscription, url: 'http://127.0.0.1:9/hook', event, event_type: 'GoalSubmitted', attempt, status_code: 500, latency_ms: 3, outcome: 'retry', next_retry_at: null, error: null };
}

describe.each(STORE_KINDS)('store contract: webhooks (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('a subscription starts at the last event, keeps its secret, is updated and removed; an unknown id is refused', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await readSubscriptions(paths)).toEqual([]);
    const event = await appendEvent(paths, { type: 'DashboardStarted', detail: 'before the subscription' });
    const now = new Date('2026-05-01T10:00:00.000Z');
    const { subscription } = await addSubscription(paths, { url: 'http://127.0.0.1:9/hook', events: ['GoalSubmitted,Landed'], secret: ' s3cret ' }, now);
    expect(subscription).toMatchObject({ url: 'http://127.0.0.1:9/hook', events: ['GoalSubmitted', 'Landed'], created_at: now.toISOString(), status: 'active', cursor: event.id, retry: null, delivered: 0, gave_up: 0 });
    expect(await readSecret(paths, subscription.id)).toBe('s3cret');
    expect(await readSubscriptions(paths)).toEqual([subscription]);
    const updated = await updateSubscription(paths, subscription.id, (s) => ({ ...s, delivered: s.delivered + 1 }));
    expect(updated?.delivered).toBe(1);
    expect(await updateSubscription(paths, 'wh-00000000', (s) => s)).toBeUndefined();
    expect(await readSubscriptions(paths)).toEqual([updated]);
    await expect(addSubscription(paths, { url: 'ftp://127.0.0.1/x', events: ['*'] })).rejects.toThrow(/URL/);
    await expect(addSubscription(paths, { url: 'http://127.0.0.1:9/hook', events: ['NoSuchEvent'] })).rejects.toThrow('--events NoSuchEvent');
    await expect(removeSubscription(paths, 'wh-00000000')).rejects.toThrow('ID wh-00000000: no such webhook');
    expect(await removeSubscription(paths, subscription.id)).toEqual(updated);
    expect(await readSubscriptions(paths)).toEqual([]);
    await expect(readSecret(paths, subscription.id)).rejects.toThrow();
  });

  it('deliveries are read oldest first, of one subscription when asked, the last `limit` of them', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await readDeliveries(paths)).toEqual([]);
    const records = [delivery('wh-aaaaaaaa', 'e1', 1), delivery('wh-bbbbbbbb', 'e1', 1), delivery('wh-aaaaaaaa', 'e1', 2), delivery('wh-aaaaaaaa', 'e2', 1)];
    for (const record of records) await appendDelivery(paths, record);
    expect(await readDeliveries(paths)).toEqual(records);
    expect(await readDeliveries(paths, { subscription: 'wh-aaaaaaaa' })).toEqual([records[0], records[2], records[3]]);
    expect(await readDeliveries(paths, { subscription: 'wh-aaaaaaaa', limit: 2 })).toEqual([records[2], records[3]]);
    expect(await readDeliveries(paths, { limit: 1 })).toEqual([records[3]]);
  });

  it('a damaged subscriptions record is one error naming subscriptions.json and the field', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    await putRaw(garden, { kind: 'webhook-subscriptions', key: 'garden', file: 'webhooks/subscriptions.json' }, { subscriptions: [{ id: 'wh-1' }] });
    await expect(readSubscriptions(garden.paths)).rejects.toThrow(/webhooks\/subscriptions\.json: subscriptions\.0\.id/);
  });
});
