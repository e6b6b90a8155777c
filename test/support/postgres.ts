/**
 * A throwaway PostgreSQL cluster for the tests (issue 27, "Real parts in
 * tests"): Debian's server binaries, a fresh data directory in the temp
 * directory, run as the `postgres` user when the tests run as root (initdb
 * refuses root), on 127.0.0.1 and a free port, with its socket in the data
 * directory. {@link startCluster} starts one; `stop()` stops it and removes
 * the directory. The global setup starts one per test run and hands its
 * admin URL to the workers (`inject('pgAdminUrl')`); {@link freshDatabase}
 * makes a database of its own for one test file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A running cluster: the admin URL (superuser `postgres`, database `postgres`) and how to end it. */
export interface Cluster {
  url: string;
  port: number;
  dataDir: string;
  /** Stops the server (fast shutdown) and removes its data directory. */
  stop(): void;
}

/** Where Debian's server binaries are (`/usr/lib/postgresql/<major>/bin`), the newest major first; undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  let majors: string[];
  try {
    majors = fs.readdirSync(base).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
  } catch {
    return undefined;
  }
  for (const major of majors) {
    const bin = path.join(base, major, 'bin');
    if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) return bin;
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs a server binary as the postgres user when we are root (initdb and postgres refuse root), else as ourselves. */
function asPostgres(bin: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? 'runuser' : bin;
  const argv = asRoot ? ['-u', 'postgres', '--', bin, ...args] : args;
  const result = spawnSync(command, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) {
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed (exit ${result.status}): ${(result.stderr || result.stdout || '').trim().split('\n').slice(-3).join(' / ')}`);
  }
}

/**
 * Starts a new cluster on 127.0.0.1 and a free port. Throwaway data needs no
 * durability: fsync, synchronous commit and full page writes are off unless
 * `durable` (bench/store.mjs measures a cluster as a team would run it too).
 *
 * @throws Error naming the missing package when PostgreSQL's server is not installed, or the failing step.
 */
export async function startCluster(options: { durable?: boolean } = {}): Promise<Cluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql: apt-get install postgresql (.ci/run does)');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-pg-'));
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres:', dataDir]);
  fs.chmodSync(dataDir, 0o700);
  asPostgres(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  // A port can be taken between the probe and the start: try a few.
  for (let attempt = 0; ; attempt += 1) {
    const port = await freePort();
    const speed = options.durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off';
    const serverOptions = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dataDir}${speed} -c max_connections=300`;
    try {
      asPostgres(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-l', path.join(dataDir, 'server.log'), '-o', serverOptions, '-w', '-t', '60', 'start']);
    } catch (error) {
      if (attempt < 3) continue;
      fs.rmSync(dataDir, { recursive: true, force: true });
      throw error;
    }
    let stopped = false;
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      stop() {
        if (stopped) return;
        stopped = true;
        try {
          asPostgres(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
        } finally {
          fs.rmSync(dataDir, { recursive: true, force: true });
        }
      },
    };
  }
}

/** The URL of the same cluster, another database. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

let made = 0;

/**
 * Creates an empty database in the cluster at `adminUrl` for one test file
 * (or one test) and returns its URL; `drop()` removes it, ending its sessions.
 */
export async function freshDatabase(adminUrl: string, prefix = 'pak2_test'): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${(made += 1)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: databaseUrl(adminUrl, name),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
