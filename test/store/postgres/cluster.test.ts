import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { testDatabase } from '../../support/pg-test.js';

describe('the throwaway PostgreSQL cluster', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  afterAll(() => db?.drop());
  it('serves a fresh database on loopback', async () => {
    db = await testDatabase();
    expect(new URL(db.url).hostname).toBe('127.0.0.1');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query<{ db: string; n: number }>('SELECT current_database() AS db, (SELECT count(*)::int FROM pg_tables WHERE schemaname = $1) AS n', ['public']);
    await client.end();
    expect(rows[0]).toEqual({ db: db.name, n: 0 });
  });
});
