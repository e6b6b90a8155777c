import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CREDENTIAL_SHAPES,
  FILE_CHUNK_BYTES,
  makeRedactor,
  MIN_SECRET_LENGTH,
  redactFile,
  secretLookingNames,
} from '../../source/redact.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-redact-'));
  dirs.push(dir);
  return dir;
}

const shapesOnly = makeRedactor({ enabled: true, secrets: [] });

const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
  'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';

describe('makeRedactor: credential shapes', () => {
  const cases: [label: string, credential: string][] = [
    ['anthropic_key', 'sk-ant-api03-Zx9_abcdefghijklmnopqrstuvwxyz0123456789-ABCDEFGHIJ'],
    ['openai_key', 'sk-abcdefghij1234567890KLMNOPQRSTUVWXyz12345678abcd'],
    ['openai_key', 'sk-proj-Ab3_cdEFgh-ijKLmnOPqrSTuv1234'],
    ['github_token', `ghp_${'a1B2c3D4e5'.repeat(3)}abcdef`],
    ['github_token', `gho_${'Z'.repeat(36)}`],
    ['github_token', `ghs_${'0'.repeat(36)}`],
    ['github_pat', `github_pat_11ABCDEFG0123456789abc_${'x'.repeat(59)}`],
    ['aws_access_key_id', 'AKIAIOSFODNN7EXAMPLE'],
    ['slack_token', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx'],
    ['google_api_key', `AIzaSy${'A1b2C3d4E5'.repeat(3)}_-a`],
    ['jwt', JWT],
    ['private_key', PEM],
    ['private_key', PEM.replace(/RSA /g, '')],
    ['private_key', PEM.replace(/RSA /g, 'OPENSSH ')],
  ];
  it.each(cases)('replaces a %s', (label, credential) => {
    expect(credential.length).toBeGreaterThan(10);
    expect(shapesOnly(`before ${credential} after`)).toBe(`before [REDACTED:${label}] after`);
    expect(shapesOnly(`"${credential}"`)).toBe(`"[REDACTED:${label}]"`);
    expect(shapesOnly(`x=${credential}\n`)).toBe(`x=[REDACTED:${label}]\n`);
  });

  it('names every shape it has a case for', () => {
    expect(new Set(cases.map(([label]) => label))).toEqual(
      new Set(CREDENTIAL_SHAPES.map((shape) => shape.label).filter((label) => !['bearer_token', 'basic_auth'].includes(label))),
    );
  });

  it('keeps the word Bearer (and the Authorization header) and replaces the token', () => {
    expect(shapesOnly('Authorization: Bearer abcdef0123456789abcdef.XYZ')).toBe('Authorization: Bearer [REDACTED:bearer_token]');
    expect(shapesOnly('curl -H "authorization: bearer 0123456789abcdefABCDEF=="')).toBe(
      'curl -H "authorization: bearer [REDACTED:bearer_token]"',
    );
    expect(shapesOnly(`Bearer ${JWT}`)).toBe('Bearer [REDACTED:bearer_token]');
    expect(shapesOnly('Authorization: Basic dXNlcjpwYXNzd29yZA==')).toBe('Authorization: Basic [REDACTED:basic_auth]');
  });

  it('leaves ordinary text alone', () => {
    const ordinary = [
      'a sketch, ask-a-question, risk-assessment-of-the-project-plan, task-list',
      'sk-learn-compatible-estimator-pipeline-thing (no digit: not a key)',
      'commit 9b68c2984c94f44f9b68c2984c94f44f12345678 and 8af0557',
      'run 7f37adcb-c9fa-4f7e-b250-07dd11efa444',
      'the Bearer of bad news; Bearer token auth is described in RFC 6750',
      'AKIA is a prefix; AKIAIOSFODNN7EXAMPLEX is too long to be an id',
      'ghp_short and gh_pat_x, xoxb-short',
      'eyJhbGciOiJIUzI1NiJ9 alone is only a header',
      '-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----',
      '-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----',
      'PASSWORD=<set in the environment>, TOKEN_LIMIT=4096, key: value',
      'ünïcödé text, emoji 🎉, tabs\tand\r\nCRLF',
    ].join('\n');
    expect(shapesOnly(ordinary)).toBe(ordinary);
  });

  it('redacts an unterminated private key block (a truncated log)', () => {
    const truncated = PEM.split('\n').slice(0, 3).join('\n');
    expect(shapesOnly(`log:\n${truncated}`)).toBe('log:\n[REDACTED:private_key]');
  });

  it('catches a private key inside a JSON line (escaped newlines)', () => {
    const line = JSON.stringify({ type: 'tool_result', content: `cat id_rsa\n${PEM}\n` });
    expect(shapesOnly(line)).toBe(JSON.stringify({ type: 'tool_result', content: 'cat id_rsa\n[REDACTED:private_key]\n' }));
  });

  it('is idempotent', () => {
    const text = `Bearer abcdef0123456789abcdef ${JWT} ${PEM} AKIAIOSFODNN7EXAMPLE`;
    const once = shapesOnly(text);
    expect(shapesOnly(once)).toBe(once);
  });
});

describe('makeRedactor: secret values', () => {
  it('replaces a value wherever it occurs, with its name', () => {
    const redact = makeRedactor({ enabled: true, secrets: [{ name: 'MINIMAX_API_KEY', value: 'mm-4f9c2a7e' }] });
    expect(redact('key=mm-4f9c2a7e; again:mm-4f9c2a7emm-4f9c2a7e')).toBe(
      'key=[REDACTED:MINIMAX_API_KEY]; again:[REDACTED:MINIMAX_API_KEY][REDACTED:MINIMAX_API_KEY]',
    );
  });

  it('replaces the raw and the JSON-escaped forms of a value with quotes and backslashes', () => {
    const value = 'pa"ss\\word\n2';
    const redact = makeRedactor({ enabled: true, secrets: [{ name: 'DB_PASSWORD', value }] });
    expect(redact(`raw: ${value}`)).toBe('raw: [REDACTED:DB_PASSWORD]');
    expect(redact(JSON.stringify({ env: value }))).toBe('{"env":"[REDACTED:DB_PASSWORD]"}');
    // A JSON document quoted inside a JSON log line: escaped twice.
    expect(redact(JSON.stringify({ content: JSON.stringify({ env: value }) }))).toBe(
      JSON.stringify({ content: '{"env":"[REDACTED:DB_PASSWORD]"}' }),
    );
  });

  it('treats regex characters in values literally', () => {
    const redact = makeRedactor({ enabled: true, secrets: [{ name: 'S', value: 'a.b*c+(d)|[e]$^' }] });
    expect(redact('a.b*c+(d)|[e]$^ aXb*c+(d)|[e]$^')).toBe('[REDACTED:S] aXb*c+(d)|[e]$^');
  });

  it('ignores values shorter than the minimum', () => {
    expect(MIN_SECRET_LENGTH).toBe(4);
    const redact = makeRedactor({
      enabled: true,
      secrets: [
        { name: 'ONE', value: 'a' },
        { name: 'THREE', value: 'abc' },
        { name: 'EMPTY', value: '' },
        { name: 'FOUR', value: 'wxyz' },
      ],
    });
    expect(redact('a abc wxyz')).toBe('a abc [REDACTED:FOUR]');
  });

  it('replaces the longest of overlapping values whole, whatever their order', () => {
    const secrets = [
      { name: 'INNER', value: 'core1234' },
      { name: 'OUTER', value: 'prefix-core1234-suffix' },
    ];
    for (const order of [secrets, [...secrets].reverse()]) {
      const redact = makeRedactor({ enabled: true, secrets: order });
      expect(redact('a prefix-core1234-suffix b core1234 c')).toBe('a [REDACTED:OUTER] b [REDACTED:INNER] c');
    }
  });

  it('replaces values before shapes, so a passed-through key is labelled with its name', () => {
    const key = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789';
    const redact = makeRedactor({ enabled: true, secrets: [{ name: 'ANTHROPIC_API_KEY', value: key }] });
    expect(redact(`${key} and sk-ant-api03-someOtherKeyThatIsNotPassed99`)).toBe(
      '[REDACTED:ANTHROPIC_API_KEY] and [REDACTED:anthropic_key]',
    );
  });

  it('labels a value with the first name that carries it, and an unnamed one as secret', () => {
    const redact = makeRedactor({
      enabled: true,
      secrets: [
        { name: 'A_TOKEN', value: 'same-value-1' },
        { name: 'B_TOKEN', value: 'same-value-1' },
        { name: '', value: 'nameless' },
      ],
    });
    expect(redact('same-value-1 nameless')).toBe('[REDACTED:A_TOKEN] [REDACTED:secret]');
  });

  it('is the identity when disabled', () => {
    const text = `secret-value ${JWT} ${PEM} AKIAIOSFODNN7EXAMPLE`;
    const redact = makeRedactor({ enabled: false, secrets: [{ name: 'S', value: 'secret-value' }] });
    expect(redact(text)).toBe(text);
  });
});

describe('redactFile', () => {
  const SECRET = 'hunter2-\u00e9t\u00e9-secret';
  const redact = makeRedactor({ enabled: true, secrets: [{ name: 'PASSED_SECRET', value: SECRET }] });

  it('redacts in place, returns the count and keeps the mode', async () => {
    const file = path.join(tempDir(), 'executor.log');
    fs.writeFileSync(file, `line one ${SECRET}\nline two AKIAIOSFODNN7EXAMPLE ${SECRET}\nclean\n`);
    fs.chmodSync(file, 0o640);
    expect(await redactFile(file, redact)).toBe(3);
    expect(fs.readFileSync(file, 'utf8')).toBe(
      'line one [REDACTED:PASSED_SECRET]\nline two [REDACTED:aws_access_key_id] [REDACTED:PASSED_SECRET]\nclean\n',
    );
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['executor.log']);
  });

  it('redacts a read-only file and keeps it read-only', async () => {
    const file = path.join(tempDir(), 'verify.stdout');
    fs.writeFileSync(file, `${SECRET}\n`);
    fs.chmodSync(file, 0o444);
    expect(await redactFile(file, redact)).toBe(1);
    expect(fs.readFileSync(file, 'utf8')).toBe('[REDACTED:PASSED_SECRET]\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o444);
  });

  it('returns 0 for a missing file', async () => {
    expect(await redactFile(path.join(tempDir(), 'nope.log'), redact)).toBe(0);
  });

  it('leaves a file without secrets untouched (same inode, same bytes)', async () => {
    const file = path.join(tempDir(), 'clean.log');
    fs.writeFileSync(file, 'nothing to see\n');
    const before = fs.statSync(file);
    expect(await redactFile(file, redact)).toBe(0);
    expect(fs.statSync(file).ino).toBe(before.ino);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['clean.log']);
  });

  it('does nothing with a disabled redactor', async () => {
    const file = path.join(tempDir(), 'kept.log');
    fs.writeFileSync(file, `${SECRET}\n`);
    expect(await redactFile(file, makeRedactor({ enabled: false, secrets: [{ name: 'S', value: SECRET }] }))).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe(`${SECRET}\n`);
  });

  it('catches a secret and a shape split across the chunk boundary of a line longer than a chunk', async () => {
    const file = path.join(tempDir(), 'long.log');
    const secretBytes = Buffer.byteLength(SECRET);
    // One line of 3 chunks: the secret straddles the first boundary, a key the second.
    const key = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789';
    const first = 'a'.repeat(FILE_CHUNK_BYTES - Math.floor(secretBytes / 2));
    const middle = ' ' + 'b'.repeat(FILE_CHUNK_BYTES - 20);
    const second = ' ' + 'c'.repeat(FILE_CHUNK_BYTES);
    const line = `${first}${SECRET}${middle} ${key}${second}\n`;
    fs.writeFileSync(file, line);
    const start = Buffer.byteLength(first);
    expect(start).toBeLessThan(FILE_CHUNK_BYTES);
    expect(start + secretBytes).toBeGreaterThan(FILE_CHUNK_BYTES);
    const keyStart = Buffer.byteLength(`${first}${SECRET}${middle} `);
    expect(keyStart).toBeLessThan(2 * FILE_CHUNK_BYTES);
    expect(keyStart + key.length).toBeGreaterThan(2 * FILE_CHUNK_BYTES);

    expect(await redactFile(file, redact)).toBe(2);
    expect(fs.readFileSync(file, 'utf8')).toBe(`${first}[REDACTED:PASSED_SECRET]${middle} [REDACTED:anthropic_key]${second}\n`);
  });

  it('catches a private key block spanning lines and a chunk boundary', async () => {
    const file = path.join(tempDir(), 'pem.log');
    const filler = 'log line\n'.repeat(Math.ceil(FILE_CHUNK_BYTES / 9));
    const head = filler.slice(0, FILE_CHUNK_BYTES - 70);
    fs.writeFileSync(file, `${head}$ cat id_rsa\n${PEM}\n$ done\n`);
    expect(Buffer.byteLength(`${head}$ cat id_rsa\n`)).toBeLessThan(FILE_CHUNK_BYTES);
    expect(await redactFile(file, redact)).toBe(1);
    expect(fs.readFileSync(file, 'utf8')).toBe(`${head}$ cat id_rsa\n[REDACTED:private_key]\n$ done\n`);
  });

  it('catches a multi-line secret value', async () => {
    const file = path.join(tempDir(), 'multi.log');
    const value = '{\n  "type": "service_account",\n  "private": "x1y2z3"\n}';
    fs.writeFileSync(file, `before\n${value}\nafter\n`);
    const multi = makeRedactor({ enabled: true, secrets: [{ name: 'GCP_CREDENTIALS', value }] });
    expect(await redactFile(file, multi)).toBe(1);
    expect(fs.readFileSync(file, 'utf8')).toBe('before\n[REDACTED:GCP_CREDENTIALS]\nafter\n');
  });

  it('keeps every byte outside the replacements, invalid UTF-8 included', async () => {
    const file = path.join(tempDir(), 'binary.patch');
    const junk = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x0a, 0x80, 0xe2, 0x82]);
    fs.writeFileSync(file, Buffer.concat([junk, Buffer.from(` ${SECRET} `), junk]));
    expect(await redactFile(file, redact)).toBe(1);
    expect(fs.readFileSync(file)).toEqual(Buffer.concat([junk, Buffer.from(' [REDACTED:PASSED_SECRET] '), junk]));
  });

  it('redacts file content exactly as the in-memory redactor does', async () => {
    const file = path.join(tempDir(), 'same.log');
    const text = [
      `{"type":"assistant","text":"${SECRET} Bearer abcdef0123456789abcdef"}`,
      JSON.stringify({ tool: 'bash', out: `${PEM}\n${JWT}` }),
      'ghp_' + 'q'.repeat(36),
      'plain',
    ].join('\n');
    fs.writeFileSync(file, text);
    await redactFile(file, redact);
    expect(fs.readFileSync(file, 'utf8')).toBe(redact(text));
  });

  it('applies a plain redact function line by line, counting labels', async () => {
    const file = path.join(tempDir(), 'plain.log');
    fs.writeFileSync(file, 'one xx\ntwo\nthree xx xx');
    const plain = (text: string) => text.replace(/xx/g, '[REDACTED:X]');
    expect(await redactFile(file, plain)).toBe(3);
    expect(fs.readFileSync(file, 'utf8')).toBe('one [REDACTED:X]\ntwo\nthree [REDACTED:X] [REDACTED:X]');
  });

  it('does not follow a symlink', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'target'), SECRET);
    fs.symlinkSync(path.join(dir, 'target'), path.join(dir, 'link'));
    expect(await redactFile(path.join(dir, 'link'), redact)).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'target'), 'utf8')).toBe(SECRET);
  });
});

describe('secretLookingNames', () => {
  it('finds the names that look like credentials, and only those', () => {
    const env = {
      ANTHROPIC_API_KEY: 'sk-ant-api03-xxxx',
      OPENAI_API_KEY: 'sk-xxxxxxxx',
      GITHUB_TOKEN: 'ghp_xxxx',
      AWS_SECRET_ACCESS_KEY: 'abcd/efgh',
      PGPASSWORD: 'pg-pass-1',
      MYSQL_PASSWD: 'mysql-pass',
      GOOGLE_APPLICATION_CREDENTIALS: '/home/me/creds.json',
      NPM_AUTH_TOKEN: 'npm_xxxx',
      apikey: 'lowercase-key',
      TOKENIZERS_PARALLELISM: 'false',
      GIT_AUTHOR_NAME: 'Ada Lovelace',
      KEYBOARD_LAYOUT: 'dvorak',
      SSH_AUTH_SOCK: '/tmp/ssh-abc/agent.1',
      DISABLE_AUTH: 'true',
      MAX_TOKENS: '8192',
      SHORT_KEY: 'abc',
      EMPTY_SECRET: '',
      UNSET_TOKEN: undefined,
      PATH: '/usr/bin',
    };
    expect(secretLookingNames(env)).toEqual([
      'ANTHROPIC_API_KEY',
      'AWS_SECRET_ACCESS_KEY',
      'GITHUB_TOKEN',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'MYSQL_PASSWD',
      'NPM_AUTH_TOKEN',
      'OPENAI_API_KEY',
      'PGPASSWORD',
      'apikey',
    ]);
  });
});
