import { useSyncExternalStore } from 'react';
import type { Snapshot } from '../../snapshot/types.js';

/** Anything that publishes snapshots: the live SnapshotSource, or a fixed one in tests. */
export interface SnapshotStore {
  getSnapshot(): Snapshot;
  subscribe(listener: () => void): () => void;
}

/** A store that always returns one snapshot (view tests, bench). */
export function fixedStore(snapshot: Snapshot): SnapshotStore & { set(next: Snapshot): void } {
  let current = snapshot;
  const listeners = new Set<() => void>();
  return {
    getSnapshot: () => current,
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(next) {
      current = next;
      for (const l of listeners) l();
    },
  };
}

/** The current snapshot, re-rendering when the store publishes a new one. */
export function useSnapshot(store: SnapshotStore): Snapshot {
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
}
