/**
 * A dropped database connection is not a crash (issue 27; the fresh-user
 * check found every pak2 process dying on a one-second PostgreSQL restart):
 * every pak2 connection is ended by the server, then the store answers
 * again and a watcher hears the next commit.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../../source/store/postgres/store.js';
import { testDatabase } from '../../support/pg-test.js';
import { until } from '../../server/support.js';

describe('a PostgreSQL store whose connections are ended under it', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  afterAll(() => db?.drop());

  it('keeps answering, and its event watcher listens again and hears the next commit', async () => {
    db = await testDatabase('pak2_reconnect');
    const store = await openPostgresStore(db.url);
    const heard: number[] = [];
    const unwatch = await store.watchEvents((seq) => heard.push(seq));
    const first = await store.appendEvent({ id: '', type: 'GardenGenesis', detail: 'before', ts: new Date().toISOString() } as never);
    await until(() => heard.some((s) => s > 0), 10_000, 'the first notice');
    // The administrator ends every pak2 connection (as a restart does).
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const { rowCount } = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pak2' AND pid <> pg_backend_pid()");
    await admin.end();
    expect(rowCount).toBeGreaterThan(0);
    // The watcher comes back (it wakes its listener with 0 once listening again), and hears a later commit.
    await until(() => heard.includes(0), 20_000, 'the watcher listening again');
    const before = heard.length;
    const second = await store.appendEvent({ id: '', type: 'GardenGenesis', detail: 'after', ts: new Date().toISOString() } as never);
    await until(() => heard.slice(before).some((s) => s > 0), 10_000, 'a notice after the reconnect');
    expect(second.id! > first.id!).toBe(true);
    expect((await store.eventsAfter(0)).map((e) => e.event.detail)).toEqual(['before', 'after']);
    await unwatch();
    await store.close();
  });
});
