import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { readAttention } from '../snapshot/attention.js';
import { acknowledgeAttention } from '../store/index.js';

/** What {@link ackAttention} did: the ids newly acknowledged, and those that already were. */
export interface AckResult {
  acked: string[];
  already: string[];
}

/**
 * Acknowledges "needs you" items for the operator (`pak2 ack`, `a` in the
 * workbench's list, `POST /attention/ack`; docs/attention/level2.md,
 * "Acknowledging"): each id leaves the list and is written to
 * `attention.json` with when and by whom, one `AttentionAcknowledged` event
 * each. `'all'` acknowledges every item listed now. Acknowledgements of
 * items no longer derived are dropped in the same write.
 *
 * @param by who acts: `{ name: 'operator' }` from the terminal; over HTTP the token's name and role.
 * @throws UserError (exit 1) naming the first id that is not on the list (derived now); nothing is written then.
 */
export async function ackAttention(garden: Garden, ids: readonly string[] | 'all', by: { name: string; role?: string } = { name: 'operator' }, now: Date = new Date()): Promise<AckResult> {
  const read = await readAttention(garden);
  const derived = new Map(read.derived.map((item) => [item.id, item]));
  const visible = new Set(read.items.map((item) => item.id));
  const wanted = ids === 'all' ? read.items.map((item) => item.id) : [...new Set(ids)];
  for (const id of wanted) {
    if (!derived.has(id)) throw new UserError(`ID ${id}: not on the needs-you list (pak2 attention lists the ids)`, { exitCode: 1 });
  }
  const already = wanted.filter((id) => !visible.has(id));
  const acked = await acknowledgeAttention(garden.paths, wanted.filter((id) => visible.has(id)).map((id) => derived.get(id)!), new Set(derived.keys()), by, now);
  return { acked, already };
}
