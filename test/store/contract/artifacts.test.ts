/**
 * Store contract (issue 27): a remote run's artifact records
 * (`runs/<run-id>/artifacts.jsonl`), the same on the files and on PostgreSQL.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ArtifactRecord } from '../../../source/contracts/index.js';
import { appendArtifact, hasArtifact, localArtifactContent, readArtifacts, writeArtifactContent } from '../../../source/store/index.js';
import { appendRaw, gardenOn, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: artifacts (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('artifacts are read in the order attached, foreign lines skipped; a name is known once attached', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = '1-remote-r1';
    expect(await readArtifacts(paths, run)).toEqual([]);
    expect(await hasArtifact(paths, run, 'diff.patch')).toBe(false);
    const diff: ArtifactRecord = { name: 'diff.patch', kind: 'diff', run, bytes: 12, sha256: 'a'.repeat(64), attached_at: '2026-05-01T10:00:00.000Z', by: 'runner:box' };
    const link: ArtifactRecord = { name: 'ci', kind: 'link', run, url: 'https://ci.example/1', attached_at: '2026-05-01T10:00:01.000Z', by: 'runner:box' };
    await appendArtifact(paths, diff);
    await appendRaw(garden, { kind: 'artifact', parent: run, file: `runs/${run}/artifacts.jsonl` }, { name: 'x', kind: 'tarball' });
    await appendArtifact(paths, link);
    expect(await readArtifacts(paths, run)).toEqual([diff, link]);
    expect(await hasArtifact(paths, run, 'diff.patch')).toBe(true);
    expect(await hasArtifact(paths, run, 'ci')).toBe(true);
    expect(await hasArtifact(paths, run, 'other')).toBe(false);
    expect(await readArtifacts(paths, '2-other-r1')).toEqual([]);
  });

  it('a diff or file artifact\'s content is kept once, and given back as a local file for a tool that reads a path', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = '1-remote-r1';
    expect(await localArtifactContent(paths, run, 'diff.patch')).toBeUndefined();
    const bytes = Buffer.from('diff --git a/x b/x\n\u0000\u00ff binary tail\n', 'latin1');
    await writeArtifactContent(paths, run, 'diff.patch', bytes);
    const file = await localArtifactContent(paths, run, 'diff.patch');
    expect(file).toMatch(/runs\/1-remote-r1\/artifacts\/diff\.patch$/);
    expect(fs.readFileSync(file!)).toEqual(bytes);
  });
});
