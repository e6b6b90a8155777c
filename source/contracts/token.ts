import { z } from 'zod';
import { timestamp } from './common.js';

/**
 * The roles a server token can have (docs/server/level2.md, "Tokens and
 * roles"): `operator` may call every route; `runner` the runner protocol
 * for the leases its own runner holds and the read routes; `read` the GET
 * routes and the event stream only.
 */
export const TOKEN_ROLES = ['operator', 'runner', 'read'] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

/**
 * A token's name: letters, digits, `.`, `_`, `-`, starting with a letter or
 * digit, at most 64 — the runner name pattern, since a runner token's name
 * is its runner's name.
 */
export const TOKEN_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The name of the token in `<runtime-root>/serve/token` (an operator token); reserved: `pak2 token create` refuses it. */
export const FILE_TOKEN_NAME = 'operator';

/**
 * One token of `<runtime-root>/serve/tokens.json`: its name, role, the
 * SHA-256 (hex) of the token's text (the text itself is never stored), when
 * it was made and, once revoked, when. Times ISO 8601 UTC.
 */
export const TokenRecordSchema = z.object({
  name: z.string().regex(TOKEN_NAME_PATTERN),
  role: z.enum(TOKEN_ROLES),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  created_at: timestamp(),
  revoked_at: timestamp().optional(),
});
export type TokenRecord = z.infer<typeof TokenRecordSchema>;

/** `tokens.json`: `{"tokens": [...]}`, at most one unrevoked token per name. */
export const TokenFileSchema = z.object({ tokens: z.array(TokenRecordSchema) });

/** Length of a token's secret part: 32 random bytes in base64url. */
const SECRET_LENGTH = 43;

/**
 * The role and name a token's text says of itself (`pak2_<role>_<name>_<secret>`,
 * as `pak2 token create` prints them), or undefined for any other text (the
 * `serve/token` file's). A hint for clients only (`pak2 runner` takes its
 * default `--name` from it): the server never trusts it, it looks the
 * token's hash up.
 */
export function tokenTextHint(text: string): { role: TokenRole; name: string } | undefined {
  const m = /^pak2_(operator|runner|read)_(.+)$/.exec(text);
  if (!m) return undefined;
  // The secret has a fixed length, so the split is unambiguous even though names may hold '_'.
  const rest = m[2]!;
  const name = rest.slice(0, rest.length - SECRET_LENGTH - 1);
  if (!/^_[A-Za-z0-9_-]+$/.test(rest.slice(name.length)) || rest.length - name.length !== SECRET_LENGTH + 1 || !TOKEN_NAME_PATTERN.test(name)) return undefined;
  return { role: m[1] as TokenRole, name };
}

/** The text of a new token of `role` named `name`, around a 43-character base64url secret. */
export function tokenText(role: TokenRole, name: string, secret: string): string {
  if (secret.length !== SECRET_LENGTH) throw new Error(`a token secret is ${SECRET_LENGTH} base64url characters`);
  return `pak2_${role}_${name}_${secret}`;
}
