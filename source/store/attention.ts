import path from 'node:path';
import { formatIssue, validateAttentionRecord, type AttentionAck, type AttentionRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { appendEvent } from './events.js';
import { readJsonFile, StoreError, withLock, writeJsonAtomic } from './files.js';
import { storeOf } from './backend.js';
import { GARDEN_KEY, storedWhere } from './documents.js';
import { storedRead } from './goals.js';

/** `<runtime-root>/attention.json`: the acknowledged "needs you" items (docs/attention/level2.md, "Acknowledging"). */
export function attentionFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'attention.json');
}

/**
 * The acknowledgements, by item id; none when the file is absent.
 *
 * @throws StoreError INVALID_RECORD naming the file and field when it is damaged.
 */
export async function readAttentionAcks(paths: GardenPaths): Promise<Map<string, AttentionAck>> {
  const store = storeOf(paths);
  const file = store ? storedWhere(store.where, 'attention.json') : attentionFile(paths);
  const read = store ? storedRead(await store.documentRecord('attention', GARDEN_KEY)) : await readJsonFile(file);
  if (!read.ok) {
    if (read.missing) return new Map();
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateAttentionRecord(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return new Map((read.value as AttentionRecord).acked.map((ack) => [ack.id, ack]));
}

/**
 * Acknowledges `items` (each should be in `current`, the ids derived now) and
 * drops acknowledgements of ids no longer in `current`, so the file never
 * outgrows the list. One `AttentionAcknowledged` event per id newly acked
 * (`goal`/`run`: what it concerns, `detail`: the id; `token_name`/`token_role` when `by` came over HTTP).
 * Read-modify-write under a lock (the CLI, the workbench and the server may ack at once).
 *
 * @returns the ids newly acknowledged (an id already acked is not again).
 * @throws StoreError INVALID_RECORD (a damaged attention.json), IO_ERROR.
 */
export async function acknowledgeAttention(
  paths: GardenPaths,
  items: readonly { id: string; goal?: string; run?: string }[],
  current: ReadonlySet<string>,
  by: { name: string; role?: string },
  now: Date = new Date(),
): Promise<string[]> {
  const store = storeOf(paths);
  const acknowledge = async (): Promise<string[]> => {
    const acks = await readAttentionAcks(paths);
    const added: { id: string; goal?: string; run?: string }[] = [];
    for (const item of items) {
      if (acks.has(item.id)) continue;
      acks.set(item.id, { id: item.id, at: now.toISOString(), by: by.name });
      added.push(item);
    }
    const kept = [...acks.values()].filter((ack) => current.has(ack.id));
    const record: AttentionRecord = { acked: kept };
    const issues = validateAttentionRecord(record);
    if (issues.length > 0) throw new StoreError('INVALID_RECORD', `attention.json: ${formatIssue(issues[0]!)}`);
    if (store) await store.putDocument('attention', GARDEN_KEY, record);
    else await writeJsonAtomic(attentionFile(paths), record);
    for (const item of added) {
      const about = { ...(item.goal ? { goal: item.goal } : {}), ...(item.run ? { run: item.run } : {}) };
      await appendEvent(paths, { type: 'AttentionAcknowledged', ...about, detail: item.id, ...(by.role ? { token_name: by.name, token_role: by.role } : {}) }, now);
    }
    return added.map((item) => item.id);
  };
  // The store's lock is its transaction: the acknowledgements and their events commit together.
  if (store) return store.withDocumentLock('attention', GARDEN_KEY, acknowledge);
  return withLock(paths.runtimeRoot, acknowledge, path.join(paths.runtimeRoot, 'attention.lock'));
}
