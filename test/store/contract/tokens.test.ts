/**
 * Store contract (issue 27): the server's named tokens (serve/tokens.json,
 * hashed) — made, revoked, refused, and known to a server's token book —
 * the same on the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createToken, readTokens, revokeToken, TokenBook } from '../../../source/server/tokens.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: tokens (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('a token is made once per name, known to the token book from the next request, and revoked', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const book = new TokenBook(paths, 'file-token');
    expect(await readTokens(paths)).toEqual([]);
    const made = await createToken(paths, { role: 'read', name: 'ci' }, new Date('2026-05-01T10:00:00.000Z'));
    expect(made.record).toMatchObject({ name: 'ci', role: 'read', created_at: '2026-05-01T10:00:00.000Z' });
    expect(made.file).toContain('serve/tokens.json');
    expect(await readTokens(paths)).toEqual([made.record]);
    expect(await book.callerOf(`Bearer ${made.token}`)).toEqual({ name: 'ci', role: 'read' });
    expect(await book.callerOf('Bearer file-token')).toEqual({ name: 'operator', role: 'operator' });
    await expect(createToken(paths, { role: 'operator', name: 'ci' })).rejects.toThrow('--name ci: a read token of that name exists');
    await expect(createToken(paths, { role: 'god', name: 'x' })).rejects.toThrow('--role god: not a role');
    const revoked = await revokeToken(paths, 'ci', new Date('2026-05-02T10:00:00.000Z'));
    expect(revoked.revoked_at).toBe('2026-05-02T10:00:00.000Z');
    expect(await book.callerOf(`Bearer ${made.token}`)).toBeUndefined();
    await expect(revokeToken(paths, 'ci')).rejects.toThrow('NAME ci: already revoked');
    await expect(revokeToken(paths, 'nobody')).rejects.toThrow('NAME nobody: no such token');
  });

  it('a damaged tokens record is one error naming tokens.json; the book says it once and lets only the file token in', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const said: string[] = [];
    const book = new TokenBook(garden.paths, 'file-token', (line) => said.push(line));
    await putRaw(garden, { kind: 'serve-tokens', key: 'garden', file: 'serve/tokens.json' }, { tokens: [{ name: 'ci' }] });
    await expect(readTokens(garden.paths)).rejects.toThrow(/serve\/tokens\.json: tokens\.0\./);
    expect(await book.callerOf('Bearer pak2_read_ci_x')).toBeUndefined();
    expect(await book.callerOf('Bearer pak2_read_ci_y')).toBeUndefined();
    expect(await book.callerOf('Bearer file-token')).toEqual({ name: 'operator', role: 'operator' });
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('serve/tokens.json');
  });
});
