import crypto from 'node:crypto';
import dns from 'node:dns/promises';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { GardenPaths } from '../garden/index.js';
import { isErrno, UserError } from '../errors.js';
import { DOCUMENT_GITIGNORES } from '../store/index.js';

/** `<runtime-root>/serve/`: the server's own files. */
export function serveDir(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'serve');
}

/** `<runtime-root>/serve/token`: the operator's bearer token, made at the server's first start (mode 0600). */
export function tokenFile(paths: GardenPaths): string {
  return path.join(serveDir(paths), 'token');
}

/** What `serve/.gitignore` keeps out of the runtime history: the tokens (hashed ones too), their lock, the log (a store export writes the same). */
const SERVE_IGNORED: readonly string[] = DOCUMENT_GITIGNORES.tokens.lines;

/**
 * Makes `<runtime-root>/serve/` (mode 0700) and its `.gitignore`: the
 * runtime root is a git repo (runtime history commits it), and the tokens
 * and the log never go in. Lines an older `.gitignore` lacks are added.
 *
 * @returns the directory.
 */
export async function ensureServeDir(paths: GardenPaths): Promise<string> {
  const dir = serveDir(paths);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const ignore = path.join(dir, '.gitignore');
  const text = await fsp.readFile(ignore, 'utf8').catch(() => '');
  const have = new Set(text.split('\n').map((l) => l.trim()));
  const missing = SERVE_IGNORED.filter((l) => !have.has(l));
  if (missing.length) await fsp.appendFile(ignore, `${text && !text.endsWith('\n') ? '\n' : ''}${missing.join('\n')}\n`);
  return dir;
}

/**
 * The server's bearer token: read from `<runtime-root>/serve/token`, or made
 * at first start (32 random bytes, base64url) into a new file of mode 0600.
 * A token file readable by others is narrowed to 0600.
 *
 * @throws UserError when the token file is empty or cannot be read or written.
 */
export async function ensureToken(paths: GardenPaths): Promise<{ token: string; file: string }> {
  const file = tokenFile(paths);
  await ensureServeDir(paths);
  const token = crypto.randomBytes(32).toString('base64url');
  try {
    const handle = await fsp.open(file, 'wx', 0o600);
    try {
      await handle.writeFile(`${token}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { token, file };
  } catch (error) {
    if (!isErrno(error, 'EEXIST')) throw new UserError(`${file}: cannot write the token (${(error as Error).message})`, { exitCode: 1 });
  }
  const stat = await fsp.stat(file);
  if ((stat.mode & 0o077) !== 0) await fsp.chmod(file, 0o600);
  const existing = (await fsp.readFile(file, 'utf8')).trim();
  if (!existing) throw new UserError(`${file}: the token file is empty; delete it and start again for a new token`, { exitCode: 1 });
  return { token: existing, file };
}

/**
 * True when the `Authorization` header carries `Bearer <token>`. The
 * comparison is constant-time (crypto.timingSafeEqual over SHA-256 digests,
 * so the lengths never differ either).
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = bearerOf(header) ?? '';
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(token).digest();
  return crypto.timingSafeEqual(a, b) && given.length > 0;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined for none or another scheme. */
export function bearerOf(header: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
}

/** True for a loopback address: 127.0.0.0/8, ::1, or 127.x mapped into IPv6. */
export function isLoopbackAddress(address: string): boolean {
  const plain = address.replace(/^\[|\]$/g, '').replace(/^::ffff:/i, '');
  if (net.isIPv4(plain)) return plain.split('.')[0] === '127';
  if (net.isIPv6(plain)) return /^(0{0,4}:){7}0{0,3}1$|^::1$/i.test(plain);
  return false;
}

/**
 * Checks where the server may listen: a host that resolves only to loopback
 * addresses is fine; any other (0.0.0.0, ::, a LAN address, a name that
 * resolves off the machine) needs `--host` given explicitly on the command
 * line (`explicit`).
 *
 * @throws UserError naming the host and where it came from, in one line.
 */
export async function checkHost(host: string, explicit: boolean, from: string): Promise<void> {
  let addresses: string[];
  try {
    addresses = net.isIP(host.replace(/^\[|\]$/g, '')) ? [host.replace(/^\[|\]$/g, '')] : (await dns.lookup(host, { all: true })).map((a) => a.address);
  } catch {
    throw new UserError(`${from} ${host}: cannot resolve this host name`);
  }
  const remote = addresses.filter((a) => !isLoopbackAddress(a));
  if (remote.length && !explicit) {
    throw new UserError(`${from} ${host}: not a loopback address (${remote.join(', ')}); pak2 serve listens only on 127.0.0.1 or ::1 unless --host ${host} is given on the command line`);
  }
}
