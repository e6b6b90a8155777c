/**
 * The runtime history commits only closed runs (docs/runtime-history/level2.md,
 * "Only closed runs"): a close while another run is live leaves the live
 * run's directory out; that run's own close commits it, redacted. The
 * webhook store never enters the history, and one an older pak2 committed
 * leaves the index.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDir } from '../../source/garden/index.js';
import { closeRun, createGoal, openRun } from '../../source/store/index.js';
import { cleanupFixtures } from '../helpers/fixtures.js';
import { closeOneRun, git, makeGitGarden, recordOutcomes } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
  delete process.env.PAK2_CLOSED_ONLY_TOKEN;
});

const SECRET = 'closed-only-secret-3e9a7c1f5d';

describe('runtime history of closed runs only', () => {
  it("a close while another run is live commits none of the live run's files; its own close commits them redacted", async () => {
    const garden = await makeGitGarden();
    restore = recordOutcomes().restore;
    process.env.PAK2_CLOSED_ONLY_TOKEN = SECRET;
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'live' });
    const live = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'command', model: 'scripted' });
    fs.writeFileSync(path.join(runDir(garden.paths, live.id), 'events.jsonl'), `{"type":"text","text":"token ${SECRET}"}\n`);
    fs.writeFileSync(path.join(runDir(garden.paths, live.id), 'stderr.log'), `token ${SECRET}\n`);

    const other = await closeOneRun(garden, 'closes meanwhile');
    const rt = garden.paths.runtimeRoot;
    const tracked = () => git(rt, 'ls-files').split('\n').filter(Boolean);
    expect(tracked()).toContain(`runs/${other}/meta.json`);
    expect(tracked().filter((f) => f.startsWith(`runs/${live.id}/`))).toEqual([]);

    await closeRun(garden.paths, live.id, goal.type, { status: 'success', cost: { source: 'unknown' } });
    expect(tracked()).toEqual(expect.arrayContaining([`runs/${live.id}/events.jsonl`, `runs/${live.id}/stderr.log`, `runs/${live.id}/meta.json`]));
    expect(git(rt, 'log', '--all', '-p')).not.toContain(SECRET);
    expect(git(rt, 'show', `HEAD:runs/${live.id}/stderr.log`)).toBe('token [REDACTED:PAK2_CLOSED_ONLY_TOKEN]\n');
  });

  it('webhooks/ is never committed, and one an older pak2 committed leaves the index at the next capture', async () => {
    const garden = await makeGitGarden();
    restore = recordOutcomes().restore;
    const rt = garden.paths.runtimeRoot;
    await closeOneRun(garden, 'first');
    // As an older pak2 left it: the webhook store committed.
    fs.mkdirSync(path.join(rt, 'webhooks', 'secrets'), { recursive: true });
    fs.writeFileSync(path.join(rt, 'webhooks', 'secrets', 'wh-00000001'), 'hook-secret\n');
    git(rt, 'add', '-f', 'webhooks');
    git(rt, 'commit', '-qm', 'older pak2');
    // A fresh process's first capture checks the repo again (the exclude file is rewritten when a pattern is missing).
    fs.writeFileSync(path.join(rt, '.git', 'info', 'exclude'), '');
    await closeOneRun(garden, 'second');
    expect(git(rt, 'ls-files', 'webhooks')).toBe('');
    expect(fs.readFileSync(path.join(rt, 'webhooks', 'secrets', 'wh-00000001'), 'utf8')).toBe('hook-secret\n');
    expect(fs.readFileSync(path.join(rt, '.git', 'info', 'exclude'), 'utf8')).toContain('/webhooks/');
  });
});
