/**
 * The store contract suite's fixture (issue 27): the same garden, its
 * records in the seeds' files or in a PostgreSQL database of the run's
 * throwaway cluster (test/global-setup.ts). A contract test is written once
 * with `describe.each(STORE_KINDS)` and passes against both.
 */
import type { Garden } from '../../../source/garden/index.js';
import { attachStore, detachStore } from '../../../source/store/index.js';
import { openPostgresStore, type PostgresStore } from '../../../source/store/postgres/store.js';
import { makeTestGarden } from '../../support/garden.js';
import { testDatabase } from '../../support/pg-test.js';

/** The two stores every contract test runs against. */
export const STORE_KINDS = ['file', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** A test garden on `kind`; `cleanup()` detaches and drops what it made. `url` is the database's, for a second process. */
export async function gardenOn(kind: StoreKind, options: Parameters<typeof makeTestGarden>[0] = {}): Promise<Garden & { cleanup: () => Promise<void>; store?: PostgresStore; url?: string }> {
  const garden = await makeTestGarden(options);
  if (kind === 'file') return { ...garden, cleanup: async () => garden.cleanup() };
  const db = await testDatabase('pak2_contract');
  const store = await openPostgresStore(db.url);
  attachStore(garden.paths, store);
  return {
    ...garden,
    store,
    url: db.url,
    cleanup: async () => {
      detachStore(garden.paths);
      await store.close();
      await db.drop();
      garden.cleanup();
    },
  };
}
