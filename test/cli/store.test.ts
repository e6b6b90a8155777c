/**
 * `pak2 store import|export|status` through the real CLI
 * (docs/store/level2.md, "Moving between stores"): the store named by
 * --url, PAK2_STORE_URL or [store].url, always shown with its password
 * hidden; a round trip from the command line; and each refusal — a
 * directory that is not empty, a store that is not, a URL that is none or
 * reaches nothing, a store whose schema is newer than this pak2, damaged
 * records — one line naming what, and a non-zero exit.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error a plain ES module of the benches, shared with this test
import { writeClosedGoals } from '../../bench/lib/closed-garden.mjs';
import { acquireCoordinatorLock } from '../../source/coordinator/index.js';
import { compareRecordFiles } from '../../source/store/postgres/transfer.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { testDatabase } from '../support/pg-test.js';

type Garden = Awaited<ReturnType<typeof makeTestGarden>>;

let garden: Garden;
const dirs: string[] = [];
const databases: { drop(): Promise<void> }[] = [];

/** A fresh database's URL with a password in it (the cluster trusts loopback, so any password works): it must never be printed. */
async function database(): Promise<string> {
  const db = await testDatabase('pak2_store_cli');
  databases.push(db);
  return db.url.replace('postgres@', 'postgres:sekrit@');
}

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

const env = { PAK2_STORE_URL: '' };

beforeAll(async () => {
  garden = await makeTestGarden();
  writeClosedGoals(garden.paths.runtimeRoot, { count: 20 });
});

afterAll(async () => {
  garden?.cleanup();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  for (const db of databases) await db.drop();
});

describe('pak2 store', () => {
  it('imports a garden, says where it stands, exports it back the same, all with the password hidden', async () => {
    const url = await database();
    const cwd = garden.paths.gardenRoot;
    const imported = await runCli(['store', 'import', '--url', url], { cwd, env });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/^imported 20 goals, 20 runs, 161 events, 0 leases, 0 comments from \S+ into postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+ \(read \d+ ms, loaded \d+ ms\)\n$/);

    // The store named by PAK2_STORE_URL this time.
    const status = await runCli(['store', 'status'], { cwd, env: { PAK2_STORE_URL: url } });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('(PAK2_STORE_URL)');
    expect(status.stdout).toMatch(/^schema {5}version 1, this pak2's 1: current$/m);
    expect(status.stdout).toMatch(/^goals {6}20 \(0 open, 20 closed; counter 20\)$/m);
    expect(status.stdout).toMatch(/^events {5}161$/m);
    expect(status.stdout).toMatch(/^problems {3}none$/m);
    const json = await runCli(['store', 'status', '--json', '--url', url], { cwd, env });
    expect(JSON.parse(json.stdout)).toMatchObject({ from: '--url', schema: { database: 1, code: 1, state: 'current' }, counts: { goals: 20, runs: 20, events: 161, activeLeases: 0 }, problems: [] });

    const out = path.join(tempDir('pak2-store-cli-'), 'export');
    const exported = await runCli(['store', 'export', out, '--url', url], { cwd, env });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(/^exported 20 goals, 20 runs, 161 events, 0 leases, 0 comments from postgres:\/\/postgres:\*\*\*@/);
    expect(compareRecordFiles(garden.paths.runtimeRoot, out)).toMatchObject({ identical: 63, differing: [], onlyInFirst: [], onlyInSecond: [] });

    const again = await runCli(['store', 'import', '--url', url], { cwd, env });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^pak2: store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+ is not empty \(20 goals, 20 runs, 161 events\): pak2 store import fills an empty store only/);

    for (const result of [imported, status, json, exported, again]) expect(result.stdout + result.stderr).not.toContain('sekrit');
  }, 60_000);

  it('export refuses a directory that is not empty', async () => {
    const url = await database();
    const full = tempDir('pak2-store-full-');
    fs.writeFileSync(path.join(full, 'mine.txt'), 'keep\n');
    const result = await runCli(['store', 'export', full, '--url', url], { cwd: garden.paths.gardenRoot, env });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`pak2: ${full}: not empty\nhint: pak2 store export writes into a new or empty directory\n`);
    expect(fs.readdirSync(full)).toEqual(['mine.txt']);
  });

  it('refuses a URL that is none, or that reaches nothing, without showing its password', async () => {
    const cwd = garden.paths.gardenRoot;
    const mysql = await runCli(['store', 'import', '--url', 'mysql://root:sekrit@127.0.0.1/garden'], { cwd, env });
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toBe('pak2: --url: "mysql" is not a store pak2 knows (postgres://user@host:port/database)\n');
    const bad = await runCli(['store', 'status'], { cwd, env: { PAK2_STORE_URL: 'sekrit nonsense' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('pak2: PAK2_STORE_URL: not a URL (expected postgres://user@host:port/database)\n');
    const nowhere = await runCli(['store', 'export', path.join(tempDir('pak2-store-nowhere-'), 'out'), '--url', 'postgres://postgres:sekrit@127.0.0.1:1/garden'], { cwd, env });
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/^pak2: store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/garden: cannot connect \(.*\)\n$/);
    const status = await runCli(['store', 'status', '--url', 'postgres://postgres:sekrit@127.0.0.1:1/garden'], { cwd, env });
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/^ {2}store: postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/garden: cannot connect/m);
    for (const result of [mysql, bad, nowhere, status]) expect(result.stdout + result.stderr).not.toContain('sekrit');
  });

  it('without a store named anywhere, says so (status: the garden is on its files)', async () => {
    const cwd = garden.paths.gardenRoot;
    const imported = await runCli(['store', 'import'], { cwd, env });
    expect(imported.code).toBe(2);
    expect(imported.stderr).toBe(`pak2: no PostgreSQL store named: ${garden.paths.configFile} has no [store].url and PAK2_STORE_URL is not set\nhint: give --url postgres://user@host:port/database\n`);
    const status = await runCli(['store', 'status', '--json'], { cwd, env });
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({ store: 'files', runtime_root: garden.paths.runtimeRoot });
  });

  it('refuses a store whose schema is newer than this pak2 (import, export, status)', async () => {
    const url = await database();
    const cwd = garden.paths.gardenRoot;
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query("CREATE TABLE pak2_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL); INSERT INTO pak2_schema (version, name, applied_by) VALUES (99, 'from the future', 'a newer pak2')");
    } finally {
      await client.end();
    }
    const imported = await runCli(['store', 'import', '--url', url], { cwd, env });
    expect(imported.code).toBe(1);
    expect(imported.stderr).toMatch(/^pak2: store postgres:\/\/postgres:\*\*\*@\S+: its schema is version 99, newer than this pak2 knows \(1\); upgrade pak2 before opening it\n$/);
    const exported = await runCli(['store', 'export', path.join(tempDir('pak2-store-newer-'), 'out'), '--url', url], { cwd, env });
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain('newer than this pak2 knows');
    const status = await runCli(['store', 'status', '--url', url], { cwd, env });
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/^schema {5}version 99, this pak2's 1: newer: this pak2 refuses to open it$/m);
  });

  it('names the damaged records and imports nothing; --skip-damaged leaves them out', async () => {
    const url = await database();
    const root = tempDir('pak2-store-damaged-');
    writeClosedGoals(root, { count: 3 });
    fs.writeFileSync(path.join(root, 'goals', '2-closed-goal-2.json'), '{"id":');
    const refused = await runCli(['store', 'import', '--url', url, '--from', root], { cwd: garden.paths.gardenRoot, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('damaged: goals/2-closed-goal-2.json: malformed JSON');
    expect(refused.stderr).toMatch(/^pak2: nothing imported into postgres:\/\/postgres:\*\*\*@\S+: 1 record\(s\) under \S+ cannot be imported$/m);
    expect(refused.stderr).toContain('hint: --skip-damaged imports the rest');
    const skipped = await runCli(['store', 'import', '--url', url, '--from', root, '--skip-damaged', '--json'], { cwd: garden.paths.gardenRoot, env });
    expect(skipped.code, skipped.stderr).toBe(0);
    const result = JSON.parse(skipped.stdout) as { imported: boolean; kinds: { kind: string; records: number }[]; damaged: { file: string }[] };
    expect(result.imported).toBe(true);
    expect(result.kinds.find((k) => k.kind === 'goals')?.records).toBe(2);
    expect(result.damaged.map((d) => d.file)).toEqual(['goals/2-closed-goal-2.json']);
  });

  it('refuses to read a garden a coordinator holds: its records would change under the import', async () => {
    const url = await database();
    const release = await acquireCoordinatorLock(garden.paths, 'pak2 cycle (test)');
    try {
      const result = await runCli(['store', 'import', '--url', url], { cwd: garden.paths.gardenRoot, env });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^pak2: a coordinator holds the garden \(pid \d+ on \S+ \(pak2 cycle \(test\)\), since \S+\): its records would change while they are read\nhint: stop it \(and pak2 serve\) first, then import\n$/);
    } finally {
      await release();
    }
  });

  it('refuses a directory that holds no records (--from and --url need no garden)', async () => {
    const url = await database();
    const empty = tempDir('pak2-store-empty-');
    const result = await runCli(['store', 'import', '--url', url, '--from', empty], { cwd: empty, env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^pak2: ${empty}: holds no pak2 records \\(no goals/<goal-id>\\.json, `));
  });
});
