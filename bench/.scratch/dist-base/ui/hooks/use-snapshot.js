import { useSyncExternalStore } from 'react';
/** A store that always returns one snapshot (view tests, bench). */
export function fixedStore(snapshot) {
    let current = snapshot;
    const listeners = new Set();
    return {
        getSnapshot: () => current,
        subscribe: (listener) => {
            listeners.add(listener);
            return () => listeners.delete(listener);
        },
        set(next) {
            current = next;
            for (const l of listeners)
                l();
        },
    };
}
/** The current snapshot, re-rendering when the store publishes a new one. */
export function useSnapshot(store) {
    return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
}
//# sourceMappingURL=use-snapshot.js.map