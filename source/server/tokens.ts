import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { FILE_TOKEN_NAME, TOKEN_NAME_PATTERN, TOKEN_ROLES, TokenFileSchema, tokenText, type TokenRecord, type TokenRole } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { isErrno, UserError } from '../errors.js';
import { storeOf, storeUnavailable, withLock, writeJsonAtomic } from '../store/index.js';
import { bearerOf, bearerMatches, ensureServeDir, serveDir } from './auth.js';

/** Who a request comes from: its token's name and role (docs/server/level2.md, "Tokens and roles"). */
export interface Caller {
  name: string;
  role: TokenRole;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's token's name and role, set by the server's auth hook before any route runs. */
    caller?: Caller;
  }
}

/** `<runtime-root>/serve/tokens.json`: the hashed tokens `pak2 token create` made (mode 0600). */
export function tokensFile(paths: GardenPaths): string {
  return path.join(serveDir(paths), 'tokens.json');
}

/** The document holding a store garden's tokens (`{ tokens: [...] }`, as tokens.json). */
const TOKENS_KIND = 'tokens';
const TOKENS_KEY = 'tokens.json';

/** SHA-256 of a token's text, hex: what tokens.json keeps instead of the text. */
export function hashToken(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}

/** Parses tokens.json's text. @throws UserError naming the file and the field. */
function parseTokens(file: string, text: string): TokenRecord[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UserError(`${file}: malformed JSON (${(error as Error).message})`, { exitCode: 1 });
  }
  const parsed = TokenFileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UserError(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`, { exitCode: 1 });
  }
  return parsed.data.tokens;
}

/**
 * The tokens of tokens.json, revoked ones included, in the order made
 * (none when the file is absent).
 *
 * @throws UserError naming the file and the field when it is malformed.
 */
export async function readTokens(paths: GardenPaths): Promise<TokenRecord[]> {
  const store = storeOf(paths);
  // A garden in a store shares its tokens with every server (docs/store/level2.md); serve/token stays each checkout's own.
  if (store) {
    const value = await store.documentRecord(TOKENS_KIND, TOKENS_KEY);
    return value === undefined ? [] : parseTokens(`${store.where} tokens`, JSON.stringify(value));
  }
  const file = tokensFile(paths);
  try {
    return parseTokens(file, await fsp.readFile(file, 'utf8'));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw error;
  }
}

/** Read-modify-write of tokens.json under its lock; the file is made 0600 before anything is written into it. */
async function modify<T>(paths: GardenPaths, fn: (tokens: TokenRecord[]) => { tokens: TokenRecord[]; result: T }): Promise<T> {
  const store = storeOf(paths);
  if (store) {
    return store.withDocumentLock(TOKENS_KIND, TOKENS_KEY, async () => {
      const { tokens, result } = fn(await readTokens(paths));
      await store.putDocument(TOKENS_KIND, TOKENS_KEY, { tokens });
      return result;
    });
  }
  const dir = await ensureServeDir(paths);
  const file = tokensFile(paths);
  // Made new with mode 0600 (the atomic writer keeps the mode of the file it replaces); a wider mode is narrowed.
  await fsp.writeFile(file, '{"tokens": []}\n', { flag: 'wx', mode: 0o600 }).catch((error: unknown) => {
    if (!isErrno(error, 'EEXIST')) throw new UserError(`${file}: cannot write it (${(error as Error).message})`, { exitCode: 1 });
  });
  const stat = await fsp.stat(file);
  if ((stat.mode & 0o077) !== 0) await fsp.chmod(file, 0o600);
  return withLock(
    dir,
    async () => {
      const { tokens, result } = fn(await readTokens(paths));
      await writeJsonAtomic(file, { tokens });
      return result;
    },
    path.join(dir, 'tokens.lock'),
  );
}

/** What `pak2 token create` answers: the token's text (shown once, never stored) and its record. */
export interface CreatedToken {
  token: string;
  record: TokenRecord;
  file: string;
}

/**
 * Makes a token of `role` named `name` (docs/server/level2.md, "Tokens and
 * roles"): 32 random bytes, printed as `pak2_<role>_<name>_<base64url>`;
 * only its SHA-256 goes into tokens.json. A running server takes it at its
 * next request.
 *
 * @throws UserError (exit 2) for an unknown role or a bad or reserved name;
 *   (exit 1) for a name an unrevoked token already has.
 */
export async function createToken(paths: GardenPaths, input: { role: string; name: string }, now: Date = new Date()): Promise<CreatedToken> {
  if (!(TOKEN_ROLES as readonly string[]).includes(input.role)) throw new UserError(`--role ${input.role}: not a role (${TOKEN_ROLES.join(', ')})`);
  if (!TOKEN_NAME_PATTERN.test(input.name)) throw new UserError(`--name ${input.name}: letters, digits, '.', '_', '-' only, starting with a letter or digit; at most 64`);
  // Case-blind: `Operator` beside `operator` would read as the same token in every log line.
  if (input.name.toLowerCase() === FILE_TOKEN_NAME) throw new UserError(`--name ${input.name}: reserved for the token in <runtime-root>/serve/token; choose another name`);
  const role = input.role as TokenRole;
  const token = tokenText(role, input.name, crypto.randomBytes(32).toString('base64url'));
  const record: TokenRecord = { name: input.name, role, hash: hashToken(token), created_at: now.toISOString() };
  await modify(paths, (tokens) => {
    const live = tokens.find((t) => t.name === input.name && !t.revoked_at);
    if (live) throw new UserError(`--name ${input.name}: a ${live.role} token of that name exists (made ${live.created_at}); revoke it first (pak2 token revoke ${input.name}) or choose another name`, { exitCode: 1 });
    return { tokens: [...tokens, record], result: undefined };
  });
  const store = storeOf(paths);
  return { token, record, file: store ? `${store.where} (shared by every server of the garden)` : tokensFile(paths) };
}

/**
 * Revokes the unrevoked token named `name`: its record stays, with
 * `revoked_at`; a running server answers it 401 from its next request.
 *
 * @throws UserError (exit 1) naming the name when no unrevoked token has it.
 */
export async function revokeToken(paths: GardenPaths, name: string, now: Date = new Date()): Promise<TokenRecord> {
  if (name === FILE_TOKEN_NAME) throw new UserError(`NAME ${name}: the token in <runtime-root>/serve/token; delete that file and restart pak2 serve for a new one`, { exitCode: 1 });
  return modify(paths, (tokens) => {
    const at = tokens.findIndex((t) => t.name === name && !t.revoked_at);
    if (at < 0) {
      const revoked = tokens.find((t) => t.name === name);
      throw new UserError(revoked ? `NAME ${name}: already revoked (${revoked.revoked_at})` : `NAME ${name}: no such token (pak2 token list shows them)`, { exitCode: 1 });
    }
    const record = { ...tokens[at]!, revoked_at: now.toISOString() };
    return { tokens: tokens.map((t, i) => (i === at ? record : t)), result: record };
  });
}

/**
 * Who a bearer token belongs to, for the server's auth hook: the
 * `serve/token` file's token is the operator (`operator`), any other is
 * looked up by its SHA-256 in tokens.json. The file is stat'ed on each
 * call and read again only when it changed (inode, size or mtime), so a
 * token made or revoked by `pak2 token` counts from the next request,
 * without a restart. A malformed tokens.json is said once through
 * `onProblem` (per version of the file) and counts as empty: only the
 * operator's file token gets in until it is fixed.
 */
export class TokenBook {
  private version = '';
  private byHash = new Map<string, TokenRecord>();

  constructor(
    private readonly paths: GardenPaths,
    private readonly fileToken: string,
    private readonly onProblem: (line: string) => void = () => undefined,
  ) {}

  /**
   * The caller of an `Authorization` header's token, or undefined (no token, an unknown or revoked one).
   *
   * @throws StoreError (IO_ERROR, {@link storeUnavailable}) when a store garden's tokens cannot be read and this one's
   *   standing is not known: the caller must answer "try again" (503), not 401.
   */
  async callerOf(header: string | undefined): Promise<Caller | undefined> {
    if (bearerMatches(header, this.fileToken)) return { name: FILE_TOKEN_NAME, role: 'operator' };
    const given = bearerOf(header);
    if (!given) return undefined;
    await this.refresh(given);
    const record = this.byHash.get(hashToken(given));
    return record && !record.revoked_at ? { name: record.name, role: record.role } : undefined;
  }

  private async refresh(given: string): Promise<void> {
    if (storeOf(this.paths)) return this.refreshStored(given);
    const file = tokensFile(this.paths);
    let version = 'none';
    let tokens: TokenRecord[] = [];
    try {
      const stat = await fsp.stat(file).catch((error: unknown) => {
        if (isErrno(error, 'ENOENT')) return undefined;
        throw error;
      });
      if (stat) version = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
      if (version === this.version) return;
      if (stat) tokens = parseTokens(file, await fsp.readFile(file, 'utf8'));
    } catch (error) {
      // Unreadable or malformed: said once per state of the file, never answered as a 500 carrying a path.
      const why = error instanceof UserError ? error.message : `${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
      if (version === 'none') version = `error:${why}`;
      if (version === this.version) return;
      this.onProblem(`pak2 serve: ${why}; only the token in serve/token is accepted until it is fixed`);
      tokens = [];
    }
    this.byHash = new Map(tokens.filter((t) => !t.revoked_at).map((t) => [t.hash, t]));
    this.version = version;
  }

  private storedAt = 0;
  /** True once a store garden's tokens were read at least once. */
  private storedKnown = false;
  /** The store's error while its tokens cannot be read (the last known ones are kept meanwhile). */
  private storeDown: Error | undefined;

  /**
   * A store garden's tokens, read again at most once a second (a revoke on
   * any server counts within a second). A failed read keeps the last known
   * tokens and is tried again at the next request: a store outage is never
   * read as "no tokens" (a runner answered 401 gives up for good). A token
   * unknown while the store is down, or any token before the first good
   * read, throws the store's error (the server answers 503).
   */
  private async refreshStored(given: string): Promise<void> {
    if (!this.storeDown && Date.now() - this.storedAt < STORED_TOKENS_MS) return;
    try {
      const tokens = await readTokens(this.paths);
      if (this.storeDown) this.onProblem('pak2 serve: the store answers again; tokens read');
      this.storeDown = undefined;
      this.storedKnown = true;
      this.version = 'stored';
      this.storedAt = Date.now();
      this.byHash = new Map(tokens.map((t) => [t.hash, t]));
    } catch (error) {
      if (!storeUnavailable(error)) {
        // A damaged tokens document: said once, counts as empty (as a malformed tokens.json does).
        const why = (error as Error).message;
        if (this.version !== `error:${why}`) this.onProblem(`pak2 serve: ${why}; only the token in serve/token is accepted until it is fixed`);
        this.version = `error:${why}`;
        this.storedAt = Date.now();
        this.byHash = new Map();
        return;
      }
      if (!this.storeDown) this.onProblem(`pak2 serve: the store cannot be reached (${(error as Error).message}); the last known tokens are kept and requests that need the store are answered 503 until it is back`);
      this.storeDown = error as Error;
    }
    if (this.storeDown && (!this.storedKnown || !this.byHash.has(hashToken(given)))) throw this.storeDown;
  }
}

/** How long a store garden's tokens are kept between reads, ms. */
const STORED_TOKENS_MS = 1000;
