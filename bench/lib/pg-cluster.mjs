// A throwaway PostgreSQL cluster for a bench, as the tests make one
// (test/support/postgres.ts): Debian's server binaries, a fresh data
// directory in the temp directory, run as the `postgres` user when the
// bench runs as root, on 127.0.0.1 and a free port. `stop()` stops it and
// removes the directory. Durability is left on (fsync, synchronous commit):
// a bench measures what a real store costs.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

function binDir() {
  const base = '/usr/lib/postgresql';
  const majors = fs.existsSync(base) ? fs.readdirSync(base).filter((n) => /^\d+$/.test(n)).sort((a, b) => b - a) : [];
  for (const major of majors) if (fs.existsSync(path.join(base, major, 'bin', 'initdb'))) return path.join(base, major, 'bin');
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql: apt-get install postgresql, or give --url');
}

function asPostgres(bin, args) {
  const root = process.getuid?.() === 0;
  const result = spawnSync(root ? 'runuser' : bin, root ? ['-u', 'postgres', '--', bin, ...args] : args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${path.basename(bin)} failed: ${(result.stderr || result.stdout).trim()}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts a cluster; returns { url (superuser, database postgres), stop() }. */
export async function startCluster() {
  const bin = binDir();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-bench-pg-'));
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres:', dataDir]);
  fs.chmodSync(dataDir, 0o700);
  asPostgres(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  asPostgres(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-l', path.join(dataDir, 'server.log'), '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${dataDir}`, '-w', '-t', '60', 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      try {
        asPostgres(path.join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
