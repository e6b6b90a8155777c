import type { Garden } from '../garden/index.js';
import { appendEvent, inStoreTransaction, readTendState, StoreError, storeOf, GARDEN_KEY, writeTendState } from '../store/index.js';
import { UserError } from '../errors.js';

/** What {@link setTendsPaused} did: tends are paused now or not, whether that changed, and whether a running coordinator was told. */
export interface TendPauseResult {
  paused: boolean;
  changed: boolean;
  woke: boolean;
}

/**
 * Pauses or resumes automatic tends (docs/automatic-tend/level2.md,
 * "Operator control"): `pak2 tend pause|resume`, `t` in the workbench,
 * `POST /api/v1/tend/pause|resume`. Writes `<runtime-root>/tend.json`
 * (kept across restarts), appends `TendsPaused` or `TendsResumed` (detail:
 * by whom), and wakes a running coordinator, so a tend held back while
 * paused (a stuck goal) is queued by its next pass. Already so: nothing is
 * written (`changed` false).
 *
 * @param by who acts: `operator` from the terminal, the token's name over HTTP.
 * @throws UserError (exit 1) when tend.json cannot be read (it is never written over).
 */
export async function setTendsPaused(garden: Garden, paused: boolean, by = 'operator', now = new Date()): Promise<TendPauseResult> {
  const { paths } = garden;
  const change = async (): Promise<boolean> => {
    let before: boolean;
    try {
      before = (await readTendState(paths))?.paused ?? false;
    } catch (error) {
      if (error instanceof StoreError) throw new UserError(`tend.json cannot be read (${error.message}); fix or remove it, then ${paused ? 'pause' : 'resume'} again`, { exitCode: 1 });
      throw error;
    }
    if (before === paused) return false;
    await writeTendState(paths, { paused, updated_at: now.toISOString(), by });
    await appendEvent(paths, { type: paused ? 'TendsPaused' : 'TendsResumed', detail: `automatic tends ${paused ? 'paused' : 'resumed'} by ${by}` }, now);
    return true;
  };
  const store = storeOf(paths);
  // Servers on one database may pause and resume at once: one read-change-write at a time, its event in the same transaction.
  const changed = store ? await store.withDocumentLock('tend', GARDEN_KEY, change) : await inStoreTransaction(paths, change);
  if (!changed) return { paused, changed, woke: false };
  const { coordinatorSocketName, requestCoordinator } = await import('../coordinator/lock.js');
  const reply = await requestCoordinator(coordinatorSocketName(garden.paths), { op: 'wake' });
  return { paused, changed, woke: Boolean(reply?.ok) };
}
