/**
 * The store contract suite's fixture (issue 27): the same garden, its
 * records in the seeds' files or in a PostgreSQL database of the run's
 * throwaway cluster (test/global-setup.ts). A contract test is written once
 * with `describe.each(STORE_KINDS)` and passes against both.
 */
import fs from 'node:fs';
import path from 'node:path';
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

/**
 * Puts `value` where a record lives, bypassing the store functions (a record
 * damaged by hand or by another tool): for a file garden, the JSON file at
 * `file` (relative to the runtime root); for a store, document `(kind, key)`.
 */
export async function putRaw(garden: { paths: { runtimeRoot: string }; store?: PostgresStore }, where: { kind: string; key: string; file: string }, value: unknown): Promise<void> {
  if (garden.store) {
    await garden.store.putDocument(where.kind, where.key, value);
    return;
  }
  const file = path.join(garden.paths.runtimeRoot, where.file);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Appends `value` as one more line of an append-only record, bypassing the
 * store functions (a foreign line written by another tool): for a file
 * garden, a line of the JSONL file at `file` (relative to the runtime
 * root); for a store, the next line of `(kind, parent)`.
 */
export async function appendRaw(garden: { paths: { runtimeRoot: string }; store?: PostgresStore }, where: { kind: string; parent: string; file: string }, value: unknown): Promise<void> {
  if (garden.store) {
    await garden.store.appendDocumentLine(where.kind, where.parent, value);
    return;
  }
  const file = path.join(garden.paths.runtimeRoot, where.file);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.appendFileSync(file, `${JSON.stringify(value)}\n`);
}
