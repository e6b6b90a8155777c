import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { EVENT_TYPES, parseEventTypes, ULID_PATTERN } from '../../contracts/index.js';
import type { GardenPaths } from '../../garden/index.js';
import { isErrno, UserError } from '../../errors.js';
import { appendJsonLine, DOCUMENT_FILES, DOCUMENT_GITIGNORES, eventKey, eventLogLineStart, GARDEN_KEY, LINE_FILES, storedWhere, storeOf, withLock, writeJsonAtomic, type StoredNote } from '../../store/index.js';
import { endOfLog, scanEvents } from '../log-tail.js';
import { checkWebhookAddress, type WebhookTargetRules } from './target.js';

/** Where webhook subscriptions, their secrets and the delivery log live. */
export interface WebhookPaths {
  dir: string;
  subscriptions: string;
  deliveries: string;
  secrets: string;
}

/** `<runtime-root>/webhooks/`: subscriptions.json, deliveries.jsonl, secrets/<id> (0600). */
export function webhookPaths(paths: GardenPaths): WebhookPaths {
  const dir = path.join(paths.runtimeRoot, 'webhooks');
  return { dir, subscriptions: path.join(dir, 'subscriptions.json'), deliveries: path.join(dir, 'deliveries.jsonl'), secrets: path.join(dir, 'secrets') };
}

/** `*` subscribes to every event type. */
export const ALL_EVENTS = '*';

const WEBHOOK_ID_PATTERN = /^wh-[0-9a-f]{8}$/;
const iso = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO 8601 time');

/** A subscription's pending retry: the event being retried, the attempts made, when the next is due. */
const RetrySchema = z.object({
  event: z.string().regex(ULID_PATTERN),
  attempt: z.number().int().min(1),
  next_at: iso,
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
});

/** One webhook subscription (docs/server/level2.md, "Webhooks"). */
export const SubscriptionSchema = z.object({
  id: z.string().regex(WEBHOOK_ID_PATTERN),
  url: z.string().url(),
  events: z.array(z.union([z.enum(EVENT_TYPES), z.literal(ALL_EVENTS)])).min(1),
  created_at: iso,
  /** `failing` once an event was given up on; back to `active` at the next delivered one. */
  status: z.enum(['active', 'failing']),
  /** The last event id delivered (or given up on); null: from the start of the log. */
  cursor: z.string().regex(ULID_PATTERN).nullable(),
  retry: RetrySchema.nullable(),
  delivered: z.number().int().min(0),
  gave_up: z.number().int().min(0),
  last_attempt: z
    .object({ at: iso, event: z.string(), status_code: z.number().int().nullable(), outcome: z.enum(['delivered', 'retry', 'gave_up']) })
    .nullable(),
});
export type Subscription = z.infer<typeof SubscriptionSchema>;

const FileSchema = z.object({ subscriptions: z.array(SubscriptionSchema) });

/** One line of deliveries.jsonl: one attempt to deliver one event to one subscription. */
export interface DeliveryRecord {
  ts: string;
  subscription: string;
  url: string;
  event: string;
  event_type: string;
  attempt: number;
  /** The receiver's HTTP status, or null when no answer came (refused, timed out). */
  status_code: number | null;
  latency_ms: number;
  /** `delivered` (2xx), `retry` (another attempt at next_retry_at), `gave_up` (the cursor moved past the event). */
  outcome: 'delivered' | 'retry' | 'gave_up';
  next_retry_at: string | null;
  error: string | null;
}

/**
 * Reads the subscriptions (none when the file is absent).
 *
 * @throws UserError naming the file and the field when it is malformed.
 */
export async function readSubscriptions(paths: GardenPaths): Promise<Subscription[]> {
  const store = storeOf(paths);
  let file: string;
  let value: unknown;
  if (store) {
    file = storedWhere(store.where, DOCUMENT_FILES['webhook-subscriptions']());
    value = await store.documentRecord('webhook-subscriptions', GARDEN_KEY);
    if (value === undefined) return [];
  } else {
    file = webhookPaths(paths).subscriptions;
    let text: string;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new UserError(`${file}: malformed JSON (${(error as Error).message})`, { exitCode: 1 });
    }
  }
  const parsed = FileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UserError(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`, { exitCode: 1 });
  }
  return parsed.data.subscriptions;
}

/** Read-modify-write of subscriptions.json under the webhooks lock (the CLI and the worker both write it). */
async function modify<T>(paths: GardenPaths, fn: (subs: Subscription[]) => { subs: Subscription[]; result: T }): Promise<T> {
  const store = storeOf(paths);
  if (store) {
    return store.withDocumentLock('webhook-subscriptions', GARDEN_KEY, async () => {
      const { subs, result } = fn(await readSubscriptions(paths));
      await store.putDocument('webhook-subscriptions', GARDEN_KEY, { subscriptions: subs });
      return result;
    });
  }
  const wp = webhookPaths(paths);
  await fsp.mkdir(wp.dir, { recursive: true });
  return withLock(
    wp.dir,
    async () => {
      const { subs, result } = fn(await readSubscriptions(paths));
      await writeJsonAtomic(wp.subscriptions, { subscriptions: subs });
      return result;
    },
    path.join(wp.dir, 'subscriptions.lock'),
  );
}

/** The key of the last event in the log, or null for an empty log. */
export async function lastEventId(paths: GardenPaths): Promise<string | null> {
  const store = storeOf(paths);
  if (store) {
    const seq = await store.lastEventSeq();
    const [last] = seq > 0 ? await store.eventsAfter(seq - 1, 1) : [];
    return last ? eventKey(last.event) || null : null;
  }
  const end = await endOfLog(paths);
  let last: string | null = null;
  // Read back from a little before the end, further only when that holds no valid event.
  for (let back = 64 * 1024; ; back *= 8) {
    const from = await eventLogLineStart(paths, Math.max(0, end - back));
    await scanEvents(paths, from, (event, at) => {
      if (at <= end) last = eventKey(event) || null;
    });
    if (last !== null || end - back <= 0) return last;
  }
}

/** What `pak2 webhook add` gives. */
export interface SubscriptionInput {
  url: string;
  events: string[];
  /** The signing secret; generated (32 random bytes, hex) when absent. */
  secret?: string;
  /** Which receivers may be named (`[webhooks]` in PAK2.toml); default: no link-local or metadata address. */
  rules?: WebhookTargetRules;
}

/**
 * Adds a subscription whose cursor is the log's last event (it is told of
 * what happens from now on), and writes its secret to `secrets/<id>` (0600).
 * On a store, the secret is the store's too (any server may deliver); the
 * file is the operator's copy.
 *
 * @throws UserError naming `URL` (not http(s), credentials in it, a
 *   link-local or metadata address: {@link checkWebhookAddress}) or `--events`.
 */
export async function addSubscription(paths: GardenPaths, input: SubscriptionInput, now: Date = new Date()): Promise<{ subscription: Subscription; secretFile: string }> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw new UserError(`URL ${input.url}: not a URL (http://… or https://…)`);
  }
  const refused = await checkWebhookAddress(url, input.rules ?? { allowLinkLocal: false }, `URL ${input.url}`);
  if (refused) throw new UserError(refused);
  const parsed = parseEventTypes(input.events, [ALL_EVENTS]);
  if ('unknown' in parsed) throw new UserError(`--events ${parsed.unknown}: not an event type (${EVENT_TYPES.join(', ')}, or ${ALL_EVENTS})`);
  const events = parsed.types;
  if (events.length === 0) throw new UserError(`--events: name at least one event type (${EVENT_TYPES.join(', ')}), or ${ALL_EVENTS} for all`);
  const secret = input.secret ?? crypto.randomBytes(32).toString('hex');
  if (!secret.trim()) throw new UserError('--secret-file: the secret is empty');
  const cursor = await lastEventId(paths);
  const wp = webhookPaths(paths);
  const subscription = await modify(paths, (subs) => {
    let id: string;
    do id = `wh-${crypto.randomBytes(4).toString('hex')}`;
    while (subs.some((s) => s.id === id));
    const record: Subscription = {
      id,
      url: url.toString(),
      events: events as Subscription['events'],
      created_at: now.toISOString(),
      status: 'active',
      cursor,
      retry: null,
      delivered: 0,
      gave_up: 0,
      last_attempt: null,
    };
    return { subs: [...subs, record], result: record };
  });
  const secretFile = path.join(wp.secrets, subscription.id);
  await fsp.mkdir(wp.secrets, { recursive: true, mode: 0o700 });
  // The runtime root is a git repo (runtime history commits it): secrets never go in.
  await fsp.writeFile(path.join(wp.secrets, '.gitignore'), `${DOCUMENT_GITIGNORES['webhook-secret'].lines.join('\n')}\n`, { flag: 'wx' }).catch(() => undefined);
  await fsp.writeFile(secretFile, `${secret.trim()}\n`, { mode: 0o600 });
  await storeOf(paths)?.putDocument('webhook-secret', subscription.id, { text: `${secret.trim()}\n`, modified_at: now.toISOString() } satisfies StoredNote);
  return { subscription, secretFile };
}

/**
 * Removes a subscription and its secret (its delivery records stay).
 *
 * @throws UserError when no subscription has this id.
 */
export async function removeSubscription(paths: GardenPaths, id: string): Promise<Subscription> {
  const removed = await modify(paths, (subs) => ({ subs: subs.filter((s) => s.id !== id), result: subs.find((s) => s.id === id) }));
  if (!removed) throw new UserError(`ID ${id}: no such webhook (pak2 webhook list shows them)`);
  await fsp.rm(path.join(webhookPaths(paths).secrets, id), { force: true });
  await storeOf(paths)?.deleteDocument('webhook-secret', id);
  return removed;
}

/** Updates one subscription's delivery state; undefined when it was removed meanwhile. */
export async function updateSubscription(paths: GardenPaths, id: string, patch: (s: Subscription) => Subscription): Promise<Subscription | undefined> {
  return modify(paths, (subs) => {
    let updated: Subscription | undefined;
    const next = subs.map((s) => (s.id === id ? (updated = patch(s)) : s));
    return { subs: next, result: updated };
  });
}

/**
 * A subscription's signing secret.
 *
 * @throws Error naming the secret when there is none.
 */
export async function readSecret(paths: GardenPaths, id: string): Promise<string> {
  const store = storeOf(paths);
  if (store) {
    const record = (await store.documentRecord('webhook-secret', id)) as Partial<StoredNote> | undefined;
    if (typeof record?.text !== 'string') throw new Error(`${storedWhere(store.where, DOCUMENT_FILES['webhook-secret'](id))}: no signing secret`);
    return record.text.trim();
  }
  return (await fsp.readFile(path.join(webhookPaths(paths).secrets, id), 'utf8')).trim();
}

/** Appends one delivery record to deliveries.jsonl. */
export async function appendDelivery(paths: GardenPaths, record: DeliveryRecord): Promise<void> {
  const store = storeOf(paths);
  if (store) await store.appendDocumentLine('webhook-delivery', GARDEN_KEY, record);
  else await appendJsonLine(webhookPaths(paths).deliveries, record);
}

/** Where the delivery records are, as a message says it. */
export function deliveriesWhere(paths: GardenPaths): string {
  const store = storeOf(paths);
  return store ? storedWhere(store.where, LINE_FILES['webhook-delivery']()) : webhookPaths(paths).deliveries;
}

/** How much of the end of deliveries.jsonl {@link readDeliveries} reads at most. */
const DELIVERIES_WINDOW = 8 * 1024 * 1024;
/** On a store, the same window in records (a record is some 300 bytes). */
const DELIVERIES_WINDOW_RECORDS = 25_000;

/** The latest delivery records (of one subscription, when given), oldest first, at most `limit`. */
export async function readDeliveries(paths: GardenPaths, options: { subscription?: string; limit?: number } = {}): Promise<DeliveryRecord[]> {
  const store = storeOf(paths);
  if (store) {
    const out = (await store.documentLines('webhook-delivery', GARDEN_KEY, { last: DELIVERIES_WINDOW_RECORDS }))
      .map((line) => line.record as DeliveryRecord)
      .filter((record) => !options.subscription || record?.subscription === options.subscription);
    return options.limit ? out.slice(-options.limit) : out;
  }
  const file = webhookPaths(paths).deliveries;
  let text: string;
  try {
    const handle = await fsp.open(file, 'r');
    try {
      const { size } = await handle.stat();
      const from = Math.max(0, size - DELIVERIES_WINDOW);
      const buffer = Buffer.alloc(size - from);
      await handle.read(buffer, 0, buffer.length, from);
      text = buffer.toString('utf8');
      if (from > 0) text = text.slice(text.indexOf('\n') + 1);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw error;
  }
  const out: DeliveryRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const record = JSON.parse(line) as DeliveryRecord;
      if (!options.subscription || record.subscription === options.subscription) out.push(record);
    } catch {
      // a torn line
    }
  }
  return options.limit ? out.slice(-options.limit) : out;
}

let storedStamp = 0;

/**
 * The subscriptions file's modification time in ms (0 when absent): the
 * worker re-reads it when it changes. On a store, a new stamp at each call:
 * the worker reads the stored subscriptions each time (another server may
 * have changed them; one query a reload).
 */
export function subscriptionsStamp(paths: GardenPaths): number {
  if (storeOf(paths)) return (storedStamp -= 1);
  try {
    return fs.statSync(webhookPaths(paths).subscriptions).mtimeMs;
  } catch {
    return 0;
  }
}
