/**
 * `pak2 show RUN` lists a runner's artifacts (issue 28): each attached diff,
 * file and link, in the order attached, with its size and where its content
 * is, on the file store and on PostgreSQL alike.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { appendArtifact, createGoal, openRun, writeArtifactContent } from '../../source/store/index.js';
import { gardenOn, STORE_KINDS } from '../store/contract/stores.js';
import { runCli } from '../support/cli.js';

describe.each(STORE_KINDS)('pak2 show RUN: a runner\'s artifacts (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('lists each artifact: name, kind, size, and the content file (the store keeps it on PostgreSQL) or the link', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const goal = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'remote work' });
    const run = await openRun(paths, goal, { plant: 'gardener', driver: 'claude', model: 'm', runner: { name: 'box-7', host: 'box-7.lan', lease: '01JZ0000000000000000000000' } });
    const patch = Buffer.from('diff --git a/x b/x\n+made\n');
    await writeArtifactContent(paths, run.id, 'diff.patch', patch);
    await appendArtifact(paths, { name: 'diff.patch', kind: 'diff', run: run.id, bytes: patch.length, sha256: 'a'.repeat(64), attached_at: '2026-05-01T10:00:00.000Z', by: 'runner:box-7' });
    await appendArtifact(paths, { name: 'ci', kind: 'link', run: run.id, url: 'https://ci.example/1', attached_at: '2026-05-01T10:00:01.000Z', by: 'runner:box-7' });
    const env = garden.url ? { PAK2_STORE_URL: garden.url } : {};
    const shown = await runCli(['show', run.id, '--garden', paths.gardenRoot], { env });
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    const at = lines.indexOf('artifacts (2):');
    expect(at, shown.stdout).toBeGreaterThan(0);
    const where = kind === 'file' ? `${paths.runtimeRoot}/runs/${run.id}/artifacts/diff.patch` : 'kept in the store';
    expect(lines.slice(at + 1, at + 3)).toEqual([`  diff.patch  diff, ${patch.length} B  ${where}`, '  ci          link  https://ci.example/1']);
    // A local run has none: no artifacts block.
    const local = await openRun(paths, await createGoal(paths, { type: 'build', plant: 'gardener', body: 'local work' }), { plant: 'gardener', driver: 'claude', model: 'm' });
    const plain = await runCli(['show', local.id, '--garden', paths.gardenRoot], { env });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).not.toContain('artifacts');
  });
});
