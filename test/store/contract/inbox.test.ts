/**
 * Store contract (issue 27): the inbox — reply notes, their read state, the
 * notes an agent writes into the reply directory — the same on the files
 * and on PostgreSQL.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deliverReplyNote, listInbox, markNoteRead, replyDir } from '../../../source/store/index.js';
import { gardenOn, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: inbox (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('reply notes are listed newest first with their title and body, unread until marked read', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths, config } = garden;
    expect(await listInbox(paths, config)).toEqual([]);
    const first = await deliverReplyNote(paths, config, 'startup', '# Good morning\n\nAll is well.', new Date('2026-05-01T09:12:00.000Z'));
    const second = await deliverReplyNote(paths, config, 'Reply 1-A!', '\n## Reply to 1-a\n\nDone.\n', new Date('2026-05-01T09:13:00.000Z'));
    expect(path.basename(first)).toBe('20260501T091200Z-startup.md');
    expect(second).toBe(path.join(replyDir(paths, config), '20260501T091300Z-reply-1-a-.md'));
    const notes = await listInbox(paths, config, 10);
    expect(notes.map((n) => [n.name, n.title, n.body, n.unread, n.path])).toEqual([
      ['20260501T091300Z-reply-1-a-.md', 'Reply to 1-a', '\n## Reply ', true, second],
      ['20260501T091200Z-startup.md', 'Good morning', '# Good mor', true, first],
    ]);
    await markNoteRead(paths, config, '20260501T091200Z-startup.md');
    await markNoteRead(paths, config, '20260501T091200Z-startup.md');
    expect((await listInbox(paths, config)).map((n) => [n.name, n.unread])).toEqual([
      ['20260501T091300Z-reply-1-a-.md', true],
      ['20260501T091200Z-startup.md', false],
    ]);
    expect((await listInbox(paths, config))[1]!.body).toBe('# Good morning\n\nAll is well.\n');
  });

  it('a note an agent wrote into the reply directory is listed (on a store, taken in: again when it changes)', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths, config } = garden;
    const dir = replyDir(paths, config);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'retrospective-2026-05-01.md'), '# Retrospective\n\nThree goals.\n');
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a note');
    expect((await listInbox(paths, config)).map((n) => [n.name, n.title, n.unread])).toEqual([['retrospective-2026-05-01.md', 'Retrospective', true]]);
    fs.writeFileSync(path.join(dir, 'retrospective-2026-05-01.md'), '# Retrospective, revised\n');
    expect((await listInbox(paths, config)).map((n) => n.title)).toEqual(['Retrospective, revised']);
    if (garden.store) expect((await garden.store.documentRecords('inbox-note')).map((d) => d.key)).toEqual([`${config.gardenName}/retrospective-2026-05-01.md`]);
  });
});
