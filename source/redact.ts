/**
 * Redaction of every run's artifacts (issue 10, item 7; issue 25, item 4:
 * every run, not only guarded ones): the stream, the stderr log, the prompt,
 * a guarded run's prompt bundle, verify output and `rejected.patch` may carry
 * the values of the run's secret-looking environment variables and
 * credentials the agent printed. Two kinds of text are replaced:
 *
 * 1. **Known secret values** (`RedactionOptions.secrets`): every occurrence of
 *    the value, raw, JSON-escaped (`"` → `\"`, `\` → `\\`, control characters)
 *    and JSON-escaped twice (a JSON document quoted inside a JSON log line),
 *    becomes `[REDACTED:<NAME>]`, e.g. `[REDACTED:MINIMAX_API_KEY]`. Values
 *    shorter than {@link MIN_SECRET_LENGTH} characters are ignored: too short
 *    to replace without destroying ordinary text. Longest values first, so a
 *    value containing another is replaced whole.
 * 2. **Credential shapes** ({@link CREDENTIAL_SHAPES}), after the values: the
 *    match becomes `[REDACTED:<shape>]`, e.g. `[REDACTED:anthropic_key]`.
 *    `Bearer <token>` and `Authorization: Basic <token>` keep their scheme
 *    word: `Bearer [REDACTED:bearer_token]`.
 *
 * The shapes are deliberately conservative (word boundaries, minimum lengths,
 * a digit required in `sk-…` keys) so that ordinary text such as "sketch",
 * "ask-a-question", git SHAs and UUIDs is left alone. Every shape has a bounded
 * length ({@link SHAPE_SPAN} characters at most), which is what lets
 * {@link redactFile} stream a file in chunks and still catch a credential
 * split across a chunk boundary.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';

/** Secret values shorter than this many characters are not redacted. */
export const MIN_SECRET_LENGTH = 4;

/** The longest text (in characters) any credential shape can match. */
export const SHAPE_SPAN = 64 * 1024;

/** Bytes read per chunk by {@link redactFile}. */
export const FILE_CHUNK_BYTES = 1024 * 1024;

/**
 * What to redact.
 * - `enabled`: `false` makes {@link makeRedactor} return the identity
 *   (`--no-redact`, `[guard] redact = false`).
 * - `secrets`: secret values to replace wherever they occur, each with the
 *   name used in its label (`[REDACTED:<name>]`) — typically the values of
 *   the env vars passed through to the guarded run plus the agent's own API
 *   keys ({@link secretLookingNames}). Values shorter than
 *   {@link MIN_SECRET_LENGTH} are ignored; when two entries share a value the
 *   first one's name is used; an empty name is labelled `secret`.
 */
export interface RedactionOptions {
  enabled: boolean;
  secrets: { name: string; value: string }[];
}

/** Text in, the same text with secrets and credential shapes replaced out. */
export type Redact = (text: string) => string;

/** A credential shape: its label and a regex source (no flags, no captures). */
export interface CredentialShape {
  /** Used in the replacement: `[REDACTED:<label>]`. */
  label: string;
  /** What it matches, for the docs. */
  description: string;
  /** Regex source. Bounded length; lookbehind/lookahead of one character at most. */
  source: string;
  /**
   * Regex source of a prefix kept verbatim before the replacement (the
   * `Bearer ` of `Bearer <token>`). Absent: the whole match is replaced.
   */
  keep?: string;
}

// Characters of base64url tokens.
const TOKEN = 'A-Za-z0-9_-';

/**
 * `prefix` (a regex source matching exactly `length` characters) not preceded
 * by a character of the class `before`. The lookbehind comes after the
 * literal, not before it: V8 then skips ahead on the alternation's first
 * characters, about six times faster than a leading lookbehind.
 */
const startsWith = (prefix: string, length: number, before: string): string =>
  `${prefix}(?<![${before}][\\s\\S]{${length}})`;

/**
 * The credential shapes, in the order they are tried at one position. Each is
 * bounded in length and, but for the PEM block, must start a token (not
 * follow a letter, digit, `_` or `-`), so "ask-…" is not an `sk-…` key.
 */
export const CREDENTIAL_SHAPES: readonly CredentialShape[] = [
  {
    label: 'private_key',
    description:
      'PEM private key block, `-----BEGIN … PRIVATE KEY-----` to `-----END … PRIVATE KEY-----` across lines (or, unterminated, the BEGIN line and the base64 after it)',
    source:
      '-----BEGIN[ A-Z0-9]{0,64}PRIVATE KEY(?: BLOCK)?-----' +
      '(?:[\\s\\S]{0,16384}?-----END[ A-Z0-9]{0,64}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\\\\ \\t\\r\\n]{0,16384})',
  },
  {
    label: 'jwt',
    description: 'JSON Web Token, `eyJ….eyJ….<signature>`',
    source: `${startsWith('eyJ', 3, TOKEN)}[${TOKEN}]{5,16384}\\.eyJ[${TOKEN}]{5,16384}\\.[${TOKEN}]{0,16384}`,
  },
  {
    label: 'bearer_token',
    description: '`Bearer <token>` (token of 16+ characters); the word Bearer is kept',
    keep: `${startsWith('(?:Bearer|bearer|BEARER)', 6, 'A-Za-z0-9_')}[ \\t]{1,16}`,
    source: '[A-Za-z0-9._~+/-]{16,4096}={0,3}',
  },
  {
    label: 'basic_auth',
    description: '`Authorization: Basic <base64>`; the header and the word Basic are kept',
    keep: `${startsWith('[Aa]uthorization', 13, 'A-Za-z0-9_')}:[ \\t]{0,16}Basic[ \\t]{1,16}`,
    source: '[A-Za-z0-9+/]{8,4096}={0,3}',
  },
  {
    label: 'anthropic_key',
    description: 'Anthropic API key, `sk-ant-` + 20 or more of [A-Za-z0-9_-]',
    source: `${startsWith('sk-', 3, TOKEN)}ant-[${TOKEN}]{20,4096}`,
  },
  {
    label: 'openai_key',
    description: 'OpenAI API key, `sk-` or `sk-proj-` + 20 or more of [A-Za-z0-9_-], at least one a digit',
    source: `${startsWith('sk-', 3, TOKEN)}(?:proj-)?(?=[${TOKEN}]{0,4095}[0-9])[${TOKEN}]{20,4096}`,
  },
  {
    label: 'github_token',
    description: 'GitHub token, `ghp_` `gho_` `ghu_` `ghs_` `ghr_` + 36 or more alphanumerics',
    source: `${startsWith('gh[pousr]_', 4, 'A-Za-z0-9_')}[A-Za-z0-9]{36,255}(?![A-Za-z0-9])`,
  },
  {
    label: 'github_pat',
    description: 'GitHub fine-grained token, `github_pat_` + 22 or more of [A-Za-z0-9_]',
    source: `${startsWith('github_pat_', 11, 'A-Za-z0-9_')}[A-Za-z0-9_]{22,255}`,
  },
  {
    label: 'aws_access_key_id',
    description: 'AWS access key id, `AKIA` (or temporary `ASIA`) + 16 of [0-9A-Z]',
    source: `${startsWith('(?:AKIA|ASIA)', 4, 'A-Za-z0-9')}[0-9A-Z]{16}(?![A-Za-z0-9])`,
  },
  {
    label: 'slack_token',
    description: 'Slack token, `xoxa-` `xoxb-` `xoxp-` `xoxr-` `xoxs-` + 10 or more of [A-Za-z0-9-]',
    source: `${startsWith('xox[abprs]-', 5, TOKEN)}[A-Za-z0-9-]{10,255}`,
  },
  {
    label: 'google_api_key',
    description: 'Google API key, `AIza` + 35 of [0-9A-Za-z_-]',
    source: `${startsWith('AIza', 4, TOKEN)}[${TOKEN}]{35}(?![${TOKEN}])`,
  },
];

/** Label of a secret: its env var name, or `secret` when it has none. */
const secretLabel = (name: string): string => `[REDACTED:${name || 'secret'}]`;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `value`'s forms to look for: raw, JSON-escaped, JSON-escaped twice (distinct). */
function secretForms(value: string): string[] {
  const once = JSON.stringify(value).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  return [...new Set([value, once, twice])];
}

/**
 * One pass of one global regex over text, with its replacement. `span` is the
 * longest text (including lookahead) a match can depend on after its start;
 * `context` the lookbehind it may need before it.
 */
interface Pass {
  re: RegExp;
  replace: (match: RegExpExecArray) => string;
  span: number;
  context: number;
}

/** How a redactor made by {@link makeRedactor} redacts files. */
interface Engine {
  /** Passes over latin1 text (one character per byte), in order. */
  passes: Pass[];
}

/** The engines of the redactors made by {@link makeRedactor}; a disabled one maps to `null`. */
const engines = new WeakMap<Redact, Engine | null>();

function shapesPass(): Pass {
  // Shape i is alternative i: `((<keep>)(?:<source>))`, so group 1+2i is set when it matched and
  // group 2+2i is its kept prefix (the shapes' own sources have no capturing groups).
  const re = new RegExp(CREDENTIAL_SHAPES.map((shape) => `((${shape.keep ?? ''})(?:${shape.source}))`).join('|'), 'g');
  const replace = (match: RegExpExecArray): string => {
    for (let i = 0; i < CREDENTIAL_SHAPES.length; i++) {
      if (match[1 + 2 * i] !== undefined) return `${match[2 + 2 * i] ?? ''}[REDACTED:${CREDENTIAL_SHAPES[i]!.label}]`;
    }
    return match[0];
  };
  return { re, replace, span: SHAPE_SPAN + 1, context: 64 };
}

/** A pass replacing the `forms` (form → label), longest first; `null` when there are none. */
function secretsPass(forms: Map<string, string>): Pass | null {
  if (forms.size === 0) return null;
  const ordered = [...forms.keys()].sort((a, b) => b.length - a.length);
  const re = new RegExp(ordered.map(escapeRegExp).join('|'), 'g');
  return { re, replace: (match) => forms.get(match[0]) ?? '[REDACTED:secret]', span: ordered[0]!.length, context: 0 };
}

/**
 * Makes the redactor for one guarded run. With `enabled: false` it is the
 * identity. Otherwise it replaces the secret values (raw and JSON-escaped
 * forms, longest first) with `[REDACTED:<NAME>]`, then the credential shapes
 * with `[REDACTED:<shape>]`; see the module comment. Redacting redacted text
 * changes nothing (labels match no shape), unless a secret value occurs in a label.
 */
export function makeRedactor(options: RedactionOptions): Redact {
  if (!options.enabled) {
    const identity: Redact = (text) => text;
    engines.set(identity, null);
    return identity;
  }
  const textForms = new Map<string, string>();
  const byteForms = new Map<string, string>();
  for (const { name, value } of options.secrets) {
    if (value.length < MIN_SECRET_LENGTH) continue;
    for (const form of secretForms(value)) {
      if (!textForms.has(form)) textForms.set(form, secretLabel(name));
      // The same form as the file redactor sees it: UTF-8 bytes, one character per byte.
      const bytes = Buffer.from(form, 'utf8').toString('latin1');
      if (!byteForms.has(bytes)) byteForms.set(bytes, secretLabel(name));
    }
  }
  const textPasses = [secretsPass(textForms), shapesPass()].filter((pass): pass is Pass => pass !== null);
  const redact: Redact = (text) => new StreamedRedactor({ passes: textPasses }).push(text, true);
  engines.set(redact, { passes: [secretsPass(byteForms), shapesPass()].filter((pass): pass is Pass => pass !== null) });
  return redact;
}

/**
 * One pass streamed over text arriving in pieces. A match starting more than
 * `span` characters before the end of what has arrived cannot change with
 * more text, so it is replaced and committed; the rest (plus `context`
 * characters of committed text for lookbehinds) waits for the next piece.
 */
class StreamedPass {
  private carry = '';
  private contextLength = 0;
  count = 0;

  constructor(private readonly pass: Pass) {}

  push(text: string, final: boolean): string {
    const { re, replace, span, context } = this.pass;
    const window = this.carry + text;
    const limit = final ? window.length : window.length - span;
    if (limit <= this.contextLength) {
      this.carry = window;
      return '';
    }
    let out = '';
    let pos = this.contextLength;
    re.lastIndex = pos;
    for (let match = re.exec(window); match && match.index < limit; match = re.exec(window)) {
      out += window.slice(pos, match.index) + replace(match);
      this.count++;
      pos = match.index + match[0].length;
      if (match[0].length === 0) re.lastIndex++;
    }
    const commit = Math.max(limit, pos);
    out += window.slice(pos, commit);
    const keep = final ? 0 : Math.min(context, commit);
    this.carry = window.slice(commit - keep);
    this.contextLength = keep;
    return out;
  }
}

/** Streams `text` pieces through every pass in order, counting replacements. */
class StreamedRedactor {
  private readonly passes: StreamedPass[];

  constructor(engine: Engine) {
    this.passes = engine.passes.map((pass) => new StreamedPass(pass));
  }

  push(text: string, final = false): string {
    let out = text;
    for (const pass of this.passes) out = pass.push(out, final);
    return out;
  }

  get count(): number {
    return this.passes.reduce((sum, pass) => sum + pass.count, 0);
  }
}

/**
 * Redacts `file` in place and returns the number of replacements.
 *
 * - Missing file (or not a regular file — a symlink is not followed): 0, no error.
 * - Streams: the file is read in {@link FILE_CHUNK_BYTES} chunks, never whole,
 *   so a 100 MB log needs a few MB of memory. Each pass carries the last
 *   (longest match − 1) characters over to the next chunk, so a secret or
 *   shape split across a chunk boundary — inside a line of any length, or a
 *   PEM block spanning lines — is still caught. Bytes are handled one
 *   character per byte (latin1), so everything but the replaced spans keeps
 *   its exact bytes, invalid UTF-8 included.
 * - Atomic: the result goes to a temp file in the same directory with the
 *   original's mode, is fsynced, and renamed over the original. With no
 *   replacement the original is left untouched (same inode, same mtime).
 * - A redactor not made by {@link makeRedactor} is applied line by line to the
 *   UTF-8 text (a line is held whole however long); its count is the growth in
 *   `[REDACTED:` labels.
 *
 * Redact a file only once its writer has finished with it.
 */
export async function redactFile(file: string, redact: Redact): Promise<number> {
  let stat: fs.Stats;
  try {
    stat = await fsp.lstat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  if (!stat.isFile()) return 0;
  const engine = engines.get(redact);
  if (engine === null) return 0;

  const mode = stat.mode & 0o7777;
  // A read-only pass first: a file with nothing to redact (most) costs no write, so a close on a full disk writes nothing here.
  let found = 0;
  const scan = engine ? streamEngine(engine, (n) => (found = n)) : streamLines(redact, (n) => (found = n));
  for await (const _chunk of scan(fs.createReadStream(file, { highWaterMark: FILE_CHUNK_BYTES }))) {
    // counted by the transform
  }
  if (found === 0) return 0;
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.redact`);
  let count = 0;
  try {
    const transform = engine ? streamEngine(engine, (n) => (count = n)) : streamLines(redact, (n) => (count = n));
    await pipeline(
      fs.createReadStream(file, { highWaterMark: FILE_CHUNK_BYTES }),
      transform,
      fs.createWriteStream(temp, { flags: 'wx', mode }),
    );
    if (count === 0) {
      await fsp.rm(temp, { force: true });
      return 0;
    }
    const handle = await fsp.open(temp, 'r');
    try {
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temp, file);
    return count;
  } catch (error) {
    await fsp.rm(temp, { force: true });
    throw error;
  }
}

type Transform = (source: AsyncIterable<Buffer>) => AsyncGenerator<Buffer>;

function streamEngine(engine: Engine, report: (count: number) => void): Transform {
  return async function* (source) {
    const redactor = new StreamedRedactor(engine);
    for await (const chunk of source) {
      const out = redactor.push(chunk.toString('latin1'));
      if (out) yield Buffer.from(out, 'latin1');
    }
    const out = redactor.push('', true);
    if (out) yield Buffer.from(out, 'latin1');
    report(redactor.count);
  };
}

const LABEL = /\[REDACTED:/g;
const labels = (text: string): number => text.match(LABEL)?.length ?? 0;

function streamLines(redact: Redact, report: (count: number) => void): Transform {
  return async function* (source) {
    const decoder = new StringDecoder('utf8');
    let count = 0;
    let pending = '';
    const redactLine = (line: string): Buffer => {
      const out = redact(line);
      count += Math.max(0, labels(out) - labels(line));
      return Buffer.from(out, 'utf8');
    };
    for await (const chunk of source) {
      pending += decoder.write(chunk);
      const end = pending.lastIndexOf('\n') + 1;
      if (end === 0) continue;
      const lines = pending.slice(0, end);
      pending = pending.slice(end);
      for (const line of lines.split(/(?<=\n)/)) yield redactLine(line);
    }
    pending += decoder.end();
    if (pending) yield redactLine(pending);
    report(count);
  };
}

/** Name words that mark an env var as secret: a `_`/`-`/`.` segment equal to or ending in one (APIKEY, PGPASSWORD, GH_TOKEN). */
const SECRET_WORDS = /(?:KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|CREDENTIAL|CREDENTIALS|AUTH)$/;

/** Names matching {@link SECRET_WORDS} whose values are not secrets. */
const NOT_SECRET_NAMES = new Set(['SSH_AUTH_SOCK']);

/** Values that are settings, not secrets, whatever the name says. */
const NOT_SECRET_VALUE = /^(?:true|false|yes|no|on|off|null|none|undefined|\d{1,7})$/i;

/**
 * The names in `env` whose values look secret even when not passed through
 * explicitly, sorted — used by callers to add the agent's own API keys (e.g.
 * `ANTHROPIC_API_KEY`) to `RedactionOptions.secrets`.
 *
 * A name qualifies when one of its `_`/`-`/`.`-separated segments (case
 * ignored) is, or ends in, KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL
 * or AUTH (plurals too): `ANTHROPIC_API_KEY`, `GITHUB_TOKEN`, `APIKEY`,
 * `PGPASSWORD`, `NPM_AUTH_TOKEN`, `GOOGLE_APPLICATION_CREDENTIALS`. Segments
 * are matched rather than substrings so that `TOKENIZERS_PARALLELISM=false`,
 * `GIT_AUTHOR_NAME` and `KEYBOARD_LAYOUT` are not taken for secrets — their
 * values would then be replaced all over the artifacts. Names whose value is
 * shorter than {@link MIN_SECRET_LENGTH}, a boolean-like word or a short
 * number (`true`, `off`, `8080`), and `SSH_AUTH_SOCK`, are left out.
 */
export function secretLookingNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => {
      const value = env[name];
      if (value === undefined || value.length < MIN_SECRET_LENGTH || NOT_SECRET_VALUE.test(value.trim())) return false;
      const upper = name.toUpperCase();
      if (NOT_SECRET_NAMES.has(upper)) return false;
      return upper.split(/[_.-]/).some((segment) => SECRET_WORDS.test(segment));
    })
    .sort();
}

/**
 * The redaction of one run (docs/run/level2.md, "Secrets"): the values in
 * `env` of `names` (a guarded run's `env_passthrough`) and of every
 * {@link secretLookingNames} name of `env`, unset and empty ones left out.
 * `env` is the environment the run's agent starts from (the coordinator's,
 * or a guarded run's filtered one with the same values).
 */
export function runRedaction(env: NodeJS.ProcessEnv, names: readonly string[] = [], enabled = true): RedactionOptions {
  const all = [...new Set([...names, ...secretLookingNames(env)])];
  return { enabled, secrets: all.filter((name) => env[name]).map((name) => ({ name, value: env[name]! })) };
}

/**
 * A redactor of JSON values: every string (not keys, numbers or literals)
 * goes through `redact`, so a secret whose value is `null` or `true` cannot
 * break the structure. Returns the same value when nothing changed.
 */
export function redactJsonValue(redact: Redact): (value: unknown) => unknown {
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return redact(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  return walk;
}

/**
 * A redactor for JSON lines: a line that is a JSON value has its string
 * values (not its keys, numbers or literals) redacted, so a secret whose
 * value is `null` or `true` cannot break the line; any other line is text.
 * A line with nothing to redact keeps its exact bytes.
 */
export function redactJsonLine(redact: Redact): Redact {
  const walk = redactJsonValue(redact);
  return (line: string) => {
    const plain = redact(line);
    if (plain === line) return line; // nothing secret on it: the agent's bytes stay as they were
    const trimmed = line.trim();
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
      try {
        const redacted = JSON.stringify(walk(JSON.parse(trimmed)));
        return line.endsWith('\n') ? `${redacted}\n` : redacted;
      } catch {
        // not JSON: as text
      }
    }
    return plain;
  };
}

/** JSON files larger than this many bytes are redacted as text, not parsed whole. */
const JSON_PARSE_LIMIT = 8 * 1024 * 1024;

/**
 * Redacts a JSON file in place, string values only (structure kept), written
 * atomically with the file's mode; a file that is not JSON, or larger than
 * 8 MiB, is redacted as text by {@link redactFile}. Returns 1 when the file
 * changed, else 0 (the count of {@link redactFile} for text).
 */
async function redactJsonFile(file: string, redact: Redact): Promise<number> {
  const stat = await fsp.lstat(file).catch(() => undefined);
  if (!stat?.isFile()) return 0;
  if (stat.size > JSON_PARSE_LIMIT) return redactFile(file, redact);
  const text = await fsp.readFile(file, 'utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return redactFile(file, redact);
  }
  const redacted = redactJsonValue(redact)(value);
  const out = `${JSON.stringify(redacted, null, 2)}\n`;
  if (JSON.stringify(redacted) === JSON.stringify(value)) return 0;
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.redact`);
  try {
    await fsp.writeFile(temp, out, { flag: 'wx', mode: stat.mode & 0o7777 });
    await fsp.chmod(temp, stat.mode & 0o7777);
    await fsp.rename(temp, file);
  } catch (error) {
    await fsp.rm(temp, { force: true });
    throw error;
  }
  return 1;
}

/**
 * Redacts every regular file of a run directory in place (docs/run/level2.md,
 * "Secrets") but those named in `skip` (pak2's own records, written redacted):
 * `*.jsonl` line by line with {@link redactJsonLine}, `*.json` by its string
 * values, anything else as text; sub-directories and symbolic links are left
 * alone. A missing directory is nothing to do. Call it once the run's
 * processes are gone: a file with a replacement is renamed over, so a writer
 * still holding it would write into the old file. Returns the replacements.
 */
export async function redactRunDir(dir: string, redact: Redact, skip: ReadonlySet<string> = new Set()): Promise<number> {
  if (engines.get(redact) === null) return 0;
  const jsonLines = redactJsonLine(redact);
  let count = 0;
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    if (skip.has(name) || name.endsWith('.redact')) continue;
    const file = path.join(dir, name);
    try {
      if (name.endsWith('.jsonl')) count += await redactFile(file, jsonLines);
      else if (name.endsWith('.json')) count += await redactJsonFile(file, redact);
      else count += await redactFile(file, redact);
    } catch (error) {
      // Named by the file redacted, not its temp copy: the one line a full disk gets says which.
      const code = (error as NodeJS.ErrnoException).code;
      throw Object.assign(new Error(`${file}: cannot redact (${(error as Error).message})`), { ...(code ? { code } : {}), path: file, cause: Object.assign(error as object, { path: file }) });
    }
  }
  return count;
}
