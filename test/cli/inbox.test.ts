/**
 * `pak2 inbox [--unread] [--json]` and `pak2 inbox read [NOTE]` through
 * bin/pak2.js (docs/workbench/level2.md, "Panes"): what the workbench's
 * inbox pane lists (open questions, then reply notes newest first, unread
 * marked), one note printed whole and marked read through the operator
 * action the workbench calls; refusals in one line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createGoal, deliverReplyNote, listInbox } from '../../source/store/index.js';
import { postComment } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function inboxGarden() {
  const garden = await makeTestGarden();
  cleanups.push(() => garden.cleanup());
  const reply = await deliverReplyNote(garden.paths, garden.config, 'reply', '# Re: the export\n\nCSV it is.\n', new Date('2026-05-01T10:00:00.000Z'));
  const report = await deliverReplyNote(garden.paths, garden.config, 'retrospective', `# Retrospective: the last 7 days\n\n3 goals closed.\n${'More words. '.repeat(600)}\nThe end.\n`, new Date('2026-05-02T10:00:00.000Z'));
  const name = (p: string) => p.split('/').at(-1)!;
  return { garden, g: ['--garden', garden.paths.gardenRoot], reply: name(reply), report: name(report) };
}

describe('pak2 inbox', () => {
  it('lists the open questions, then the notes newest first with the unread marked; --unread and --json', async () => {
    const { garden, g, reply, report } = await inboxGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Export' });
    await postComment(garden, goal.id, { body: 'CSV or JSON?\nEither is fine by me.', blocking: true, author: 'agent:x' });

    const listed = await runCli(['inbox', ...g]);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('open questions (answer with pak2 comment GOAL --answer TEXT):');
    expect(lines[1]).toMatch(new RegExp(`^\\? ${goal.id}  \\S+  agent:x: CSV or JSON\\?$`));
    expect(lines.slice(3)).toEqual([
      expect.stringMatching(/^\s+NOTE\s+AGE\s+TITLE$/),
      expect.stringMatching(new RegExp(`^●  ${report}\\s+\\S+\\s+Retrospective: the last 7 days$`)),
      expect.stringMatching(new RegExp(`^●  ${reply}\\s+\\S+\\s+Re: the export$`)),
      'pak2 inbox read NOTE prints one and marks it read (a prefix of its name will do)',
    ]);

    const json = JSON.parse((await runCli(['inbox', ...g, '--json'])).stdout) as { questions: { goal: string }[]; notes: { name: string; unread: boolean; title: string }[] };
    expect(json.questions.map((q) => q.goal)).toEqual([goal.id]);
    expect(json.notes.map((n) => [n.name, n.unread, n.title])).toEqual([
      [report, true, 'Retrospective: the last 7 days'],
      [reply, true, 'Re: the export'],
    ]);
    expect((await runCli(['inbox', ...g, 'read', reply])).code).toBe(0);
    const unread = JSON.parse((await runCli(['inbox', ...g, '--unread', '--json'])).stdout) as { notes: { name: string }[] };
    expect(unread.notes.map((n) => n.name)).toEqual([report]);
  });

  it('read prints a note whole and marks it read (a prefix, or the oldest unread with none); refusals: an unknown note (exit 1), a prefix two notes share (exit 2)', async () => {
    const { garden, g, reply, report } = await inboxGarden();
    // No name: the oldest unread note.
    const first = await runCli(['inbox', ...g, 'read']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^${reply} · \\S+Z\n\n# Re: the export\n\nCSV it is.\n$`));
    expect((await listInbox(garden.paths, garden.config)).map((n) => [n.name, n.unread])).toEqual([
      [report, true],
      [reply, false],
    ]);
    // A prefix: the whole report, past the 4,000 characters a listing keeps.
    const whole = await runCli(['inbox', ...g, 'read', report.slice(0, 12), '--json']);
    const note = JSON.parse(whole.stdout) as { name: string; unread: boolean; body: string };
    expect(note).toMatchObject({ name: report, unread: true });
    expect(note.body.length).toBeGreaterThan(4000);
    expect(note.body.trimEnd().endsWith('The end.')).toBe(true);
    expect((await listInbox(garden.paths, garden.config)).every((n) => !n.unread)).toBe(true);
    expect((await runCli(['inbox', ...g, 'read'])).stdout).toBe('no unread notes\n');
    expect((await runCli(['inbox', ...g, '--unread'])).stdout).toBe('no unread notes\n');

    const unknown = await runCli(['inbox', ...g, 'read', 'nothing-like-it']);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([1, 'pak2: note nothing-like-it: no such note in the inbox (pak2 inbox lists them)']);
    const both = await runCli(['inbox', ...g, 'read', '2026']);
    expect([both.code, both.stderr.trim()]).toEqual([2, `pak2: note 2026: 2 notes start so (${report}, ${reply}); give more of the name`]);
  });

  it('an empty inbox says so', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const r = await runCli(['inbox', '--garden', garden.paths.gardenRoot]);
    expect([r.code, r.stdout]).toEqual([0, 'no replies yet\n']);
  });
});
