import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { historyRecordFile, setRuntimeHistoryListener, type RuntimeHistoryResult } from '../../source/history/index.js';
import { createGoal, readGoal, runEventsFile } from '../../source/store/index.js';
import { makeTempDir } from '../helpers/fixtures.js';
import { git, REAL_GIT } from '../history/support.js';
import { makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

let garden: (Garden & { cleanup: () => void }) | undefined;
let coordinator: Coordinator | undefined;
const savedPath = process.env.PATH;
let restoreListener: (() => void) | undefined;
let release: string | undefined;
afterEach(async () => {
  // A capture still held by the slow git must not hold the stop.
  if (release) fs.writeFileSync(release, '');
  release = undefined;
  await coordinator?.stop();
  coordinator = undefined;
  process.env.PATH = savedPath;
  restoreListener?.();
  garden?.cleanup();
});

describe('a run\'s close does not hold the next dispatch', () => {
  it('with one slot, the next goal runs while the closed run\'s runtime-history commit is still under way; both are captured', async () => {
    garden = await makeTestGarden({ files: { '.gitignore': '.runtime/\n' } });
    const root = garden.paths.gardenRoot;
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'garden');
    // A git whose `add` in the runtime repo waits until the test releases it.
    release = path.join(makeTempDir({}, 'pak2-release-'), 'release');
    const bin = makeTempDir({}, 'pak2-slowgit-');
    fs.writeFileSync(
      path.join(bin, 'git'),
      ['#!/bin/sh', 'if [ -n "$GIT_DIR" ] && [ "$1" = add ]; then', `  while [ ! -e ${JSON.stringify(release!)} ]; do sleep 0.02; done`, 'fi', `exec ${JSON.stringify(REAL_GIT)} "$@"`, ''].join('\n'),
    );
    fs.chmodSync(path.join(bin, 'git'), 0o755);
    process.env.PATH = `${bin}:${savedPath}`;
    const results: Array<{ run: string; result: RuntimeHistoryResult }> = [];
    restoreListener = setRuntimeHistoryListener((run, result) => results.push({ run, result }));

    const first = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'first', priority: 90 });
    const second = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'second', priority: 10 });
    coordinator = new Coordinator({ garden, onStderr: () => undefined });
    await coordinator.start();
    // The first run's record is closed and its provenance record written; its commit waits at `git add`.
    await waitFor(() => fs.existsSync(historyRecordFile(garden!.paths, `${first.id}-r1`)), 20_000);
    // Meanwhile the one slot goes to the second goal, and its agent runs to the end of its stream.
    await waitFor(async () => (await readGoal(garden!.paths, first.id)).status === 'closed', 20_000);
    await waitFor(() => readEventLog(garden!).some((e) => e.type === 'RunClosed' && e.run === `${second.id}-r1`), 20_000);
    expect(fs.readFileSync(runEventsFile(garden.paths, `${second.id}-r1`), 'utf8')).toContain('"type":"result"');
    expect(fs.existsSync(release)).toBe(false);
    expect(results).toEqual([]);

    fs.writeFileSync(release, '');
    await waitFor(() => results.length === 2, 20_000);
    release = undefined;
    expect(results.map((r) => [r.run, r.result.outcome])).toEqual([
      [`${first.id}-r1`, 'committed'],
      [`${second.id}-r1`, 'committed'],
    ]);
    await waitFor(async () => (await readGoal(garden!.paths, second.id)).status === 'closed', 20_000);
  });
});
