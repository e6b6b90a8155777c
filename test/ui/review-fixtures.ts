/**
 * Literal snapshots for the review views (docs/workbench/level2.md,
 * "Review"): goals whose latest run's landing is in each state, and diffs
 * (a small one in colour, a wide file list, a long patch, hostile content).
 */
import type { GoalRecord, LandingRecord } from '../../source/contracts/index.js';
import type { GoalRow, PlantView, Snapshot, TailState } from '../../source/snapshot/index.js';
import type { RunDiff } from '../../source/submit/index.js';
import { ago, goal, run, snapshotOf } from './fixtures.js';

const HEX = (n: number) => n.toString(16).padStart(2, '0').repeat(20);

/** A landing record of `goalId`'s first run in `state`. */
export function landing(goalId: string, state: LandingRecord['state'], overrides: Partial<LandingRecord> = {}): LandingRecord {
  const ended = state === 'conflict' || state === 'rejected' || state === 'failed';
  return {
    run: `${goalId}-r1`,
    goal: goalId,
    plant: 'gardener',
    state,
    branch: `pak2/${goalId}-r1`,
    head_commit: HEX(0xab),
    base_branch: 'main',
    base_commit: HEX(0x12),
    queued_at: ago(4),
    updated_at: ago(2),
    files: [
      { path: 'src/parser.ts', status: 'A' },
      { path: 'README.md', status: 'M' },
      { path: 'old/notes.txt', status: 'D' },
    ],
    attempts: state === 'awaiting_review' ? 0 : 1,
    ...(ended ? { failure_reason: state === 'conflict' ? 'landing_conflict' : state === 'rejected' ? 'landing_rejected' : 'landing_verify_failed' } : {}),
    ...(state === 'landed' ? { result_commit: HEX(0xcd), landed_at: ago(1), message: `main moved to ${HEX(0xcd).slice(0, 12)}` } : {}),
    ...overrides,
  } as LandingRecord;
}

/** A row of a goal whose run worked in a worktree and whose landing is `l`. */
export function landingRow(n: number, slug: string, l: LandingRecord['state'] | undefined, goalOverrides: Partial<GoalRecord> = {}, landingOverrides: Partial<LandingRecord> = {}): GoalRow {
  const g = goal(n, { id: `${n}-${slug}`, type: 'build', status: 'completed', body: `${slug.replace(/-/g, ' ')}.`, ...goalOverrides });
  const r = run(g.id, { status: 'success', completed_at: ago(3), driver: 'wt', model: 'command', cost: { source: 'unknown' }, worktree: { base_branch: 'main', base_commit: HEX(0x12), path: `/work/garden/.runtime/worktrees/${g.id}-r1`, branch: `pak2/${g.id}-r1` } } as never);
  return l ? { goal: g, run: r, landing: landing(g.id, l, landingOverrides) } : { goal: g, run: r };
}

export const gardener: PlantView = { plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) }, memory: '', skills: [], knowledge: [], threads: [] };

/** Goals in every landing state, a running one and a queued one; the first awaits review. */
export function reviewRows(): GoalRow[] {
  const live = goal(20, { id: '20-write-the-changelog', status: 'running', type: 'build' });
  const waiting = goal(21, { id: '21-plan-the-release', status: 'queued', type: 'spike' });
  return [
    { goal: live, run: run(live.id, { driver: 'wt', model: 'command' }) },
    landingRow(11, 'add-the-parser', 'awaiting_review'),
    landingRow(12, 'fix-the-date-test', 'verifying', {}, { review: { decision: 'accepted', by: 'operator', at: ago(1) } }),
    landingRow(13, 'document-the-api', 'waiting', {}, { message: 'your checkout of main has uncommitted changes to README.md: commit or set them aside and it lands', review: { decision: 'accepted', by: 'operator', at: ago(1) } }),
    landingRow(10, 'tidy-the-readme', 'awaiting_review'),
    { goal: waiting, run: undefined },
    landingRow(9, 'add-a-changelog', 'landed', { status: 'closed', closed_reason: 'success', closed_at: ago(1) }),
    landingRow(8, 'rename-the-module', 'conflict', { status: 'closed', closed_reason: 'failure', closed_at: ago(2) }, { conflict: { paths: ['src/index.ts', 'src/module.ts'] }, message: 'merging onto main at 121212121212 conflicted in src/index.ts, src/module.ts' }),
    landingRow(7, 'speed-up-the-build', 'rejected', { status: 'closed', closed_reason: 'failure', closed_at: ago(3) }, { message: 'rejected by operator: use tabs, not spaces', review: { decision: 'rejected', by: 'operator', at: ago(3), comment: 'use tabs, not spaces' } }),
    landingRow(6, 'bump-the-deps', 'failed', { status: 'closed', closed_reason: 'failure', closed_at: ago(4) }, { message: 'verify failed on the merged result', verify: { command: 'npm test', ok: false, exit_code: 1, timed_out: false, duration_ms: 4000, output_tail: '1 failed' } }),
    { goal: goal(5, { id: '5-survey-the-garden', status: 'closed', closed_reason: 'success', closed_at: ago(5), type: 'tend' }), run: run('5-survey-the-garden', { status: 'success', completed_at: ago(5) }) },
  ];
}

/** A short tail for the followed run. */
export function tailFor(runId: string): TailState {
  return {
    runId,
    file: `/work/garden/.runtime/runs/${runId}/events.jsonl`,
    lines: [
      { kind: 'text', text: 'I added the parser and its tests.' },
      { kind: 'usage', text: '✓ success · 3 turns' },
    ],
    usage: { inputTokens: 0, outputTokens: 0, costUsd: undefined },
    bytes: 200,
    truncated: false,
  } as TailState;
}

/** The review garden's snapshot: goals in every landing state, the first awaiting review followed by the run pane. */
export function reviewSnapshot(): Snapshot {
  const rows = reviewRows();
  return snapshotOf({
    goals: rows,
    counts: { queued: 1, inFlight: 4, closedShown: 5, awaitingReview: 2 },
    coordinator: { state: 'running', liveRuns: ['20-write-the-changelog-r1'] },
    plants: [gardener],
    tail: tailFor('11-add-the-parser-r1'),
  });
}

/** A small diff in every colour: a new file, a change with two hunks, a deletion, a binary file. */
export function smallDiff(): RunDiff {
  const patch = [
    'diff --git a/src/parser.ts b/src/parser.ts',
    'new file mode 100644',
    'index 0000000..1111111',
    '--- /dev/null',
    '+++ b/src/parser.ts',
    '@@ -0,0 +1,4 @@',
    '+export function parse(text: string): string[] {',
    '+\treturn text.split(",");',
    '+}',
    '+',
    'diff --git a/README.md b/README.md',
    'index 2222222..3333333 100644',
    '--- a/README.md',
    '+++ b/README.md',
    '@@ -1,3 +1,3 @@ # Project',
    ' # Project',
    '-A line.',
    '+A line, and the parser: parse("a,b") gives ["a", "b"]. This line is long enough to wrap in a narrow terminal, so it shows on two rows.',
    ' ',
    'diff --git a/old/notes.txt b/old/notes.txt',
    'deleted file mode 100644',
    'index 4444444..0000000',
    '--- a/old/notes.txt',
    '+++ /dev/null',
    '@@ -1 +0,0 @@',
    '-old notes',
    'diff --git a/logo.png b/logo.png',
    'index 5555555..6666666 100644',
    'Binary files a/logo.png and b/logo.png differ',
    '',
  ].join('\n');
  return {
    run: '11-add-the-parser-r1',
    source: 'landing',
    base: HEX(0x12),
    head: HEX(0xab),
    files: [
      { path: 'src/parser.ts', status: 'A', insertions: 4, deletions: 0 },
      { path: 'README.md', status: 'M', insertions: 1, deletions: 1 },
      { path: 'old/notes.txt', status: 'D', insertions: 0, deletions: 1 },
      { path: 'logo.png', status: 'M', insertions: null, deletions: null },
    ],
    patch,
    truncatedBytes: 0,
  };
}

/** A diff of `files` files with deep paths (a wide file list). */
export function wideDiff(files = 40): RunDiff {
  const list = Array.from({ length: files }, (_, i) => ({
    path: `packages/workbench-review/source/components/overlays/diff/very/deep/directory/number-${i}/component-with-a-long-name-${i}.tsx`,
    status: i % 5 === 0 ? 'A' : 'M',
    insertions: (i * 37) % 1000,
    deletions: (i * 11) % 300,
  }));
  const patch = list.map((f) => `diff --git a/${f.path} b/${f.path}\n--- a/${f.path}\n+++ b/${f.path}\n@@ -1 +1 @@\n-old ${f.path}\n+new ${f.path}\n`).join('');
  return { run: '11-add-the-parser-r1', source: 'landing', base: HEX(0x12), head: HEX(0xab), files: list, patch, truncatedBytes: 0 };
}

/** A patch of about `bytes` bytes: one file, hunk after hunk of numbered lines. */
export function longDiff(bytes = 4 * 1024 * 1024): RunDiff {
  const parts = ['diff --git a/data/big.txt b/data/big.txt', 'index 7777777..8888888 100644', '--- a/data/big.txt', '+++ b/data/big.txt'];
  let size = parts.join('\n').length;
  let n = 0;
  while (size < bytes) {
    const hunk = `@@ -${n * 4 + 1},2 +${n * 4 + 1},2 @@\n line ${n} stays\n-line ${n} was like this\n+line ${n} is like this now\n`;
    parts.push(hunk.slice(0, -1));
    size += hunk.length;
    n += 1;
  }
  const patch = `${parts.join('\n')}\n`;
  return { run: '11-add-the-parser-r1', source: 'landing', base: HEX(0x12), head: HEX(0xab), files: [{ path: 'data/big.txt', status: 'M', insertions: n, deletions: n }], patch, truncatedBytes: 1_234_567 };
}

/** A diff whose paths and lines carry terminal control sequences (clear screen, title, OSC 8, C1 CSI, bell, a lone CR). */
export function hostileDiff(): RunDiff {
  const evil = 'src/\u001b[2Jevil\u0007.ts';
  const patch = [
    `diff --git a/${evil} b/${evil}`,
    `--- a/${evil}`,
    `+++ b/${evil}`,
    '@@ -1 +1,3 @@',
    '-\u001b]0;pwned\u0007old title',
    '+\u001b[31mred?\u001b[0m \u009b2J \u001b]8;;http://x.example\u001b\\link\u001b]8;;\u001b\\',
    '+carriage\rreturn and \u001bc reset',
    '+\u202eevil bidi\u202c and 漢字 🌱',
    '',
  ].join('\n');
  return { run: '11-add-the-parser-r1', source: 'landing', base: HEX(0x12), head: HEX(0xab), files: [{ path: evil, status: 'M\u001b[1m', insertions: 3, deletions: 1 }], patch, truncatedBytes: 0 };
}
