/**
 * Event ids of the PostgreSQL store (seed 004: sortable ULIDs): each is
 * made under the stamp lock, after the newest id already committed, so ids
 * grow in commit order whatever the clocks of the writers say. Pure.
 */
import { ulid } from 'ulid';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The ULID one after `id` (the last character incremented, with carry). @throws Error when `id` is the largest ULID. */
export function ulidSuccessor(id: string): string {
  const chars = id.split('');
  for (let i = chars.length - 1; i >= 0; i--) {
    const at = CROCKFORD.indexOf(chars[i]!);
    if (at < CROCKFORD.length - 1) {
      chars[i] = CROCKFORD[at + 1]!;
      return chars.join('');
    }
    chars[i] = CROCKFORD[0]!;
  }
  throw new Error(`no ULID follows ${id}`);
}

/**
 * The id for the next event: a fresh ULID of `timeMs` when it sorts after
 * `lastId` (or there is none), else `lastId`'s successor (a writer whose
 * clock is behind, or several events in one millisecond).
 */
export function nextEventId(lastId: string | undefined, timeMs: number): string {
  const fresh = ulid(Number.isFinite(timeMs) ? Math.max(0, timeMs) : Date.now());
  if (!lastId || fresh > lastId) return fresh;
  // Same millisecond as the last: its successor keeps the order (a fresh one could sort before it).
  return ulidSuccessor(lastId);
}
