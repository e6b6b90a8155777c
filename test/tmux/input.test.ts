/**
 * What a real terminal sends into the workbench's text inputs (issue 16,
 * items 3 and 7), through tmux: keys in one read (`send-keys -l jj`) are
 * as many presses in the goals list; terminal reports that are not keys (focus
 * in / out, a cursor-position report, mouse reports, device attributes)
 * typed into the filter are dropped whole, and the filter still matches;
 * four lines pasted into the chat input (tmux's bracketed paste, which the
 * workbench turns on, and plain fast typing) are sent as one message with
 * their line breaks.
 *
 * PAK2_SHOW_SCREENS=1 prints the screens the tests read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, listConversations, readConversationMessages } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { makeTestGarden } from '../support/garden.js';
import { cleanupsAfterEach, goalRows, PAK2_BIN, show, statusLine, TmuxSession } from './tmux.js';

const cleanups = cleanupsAfterEach();

/** The four lines of the field report: pasted, "…UTC+13" and "2. parser…" fused into "UTC+132. parser". */
const FOUR_LINES = ['Two things broke after the upgrade:', '1. the date test fails in UTC+13', '2. parser drops the last field', '3. both only on CI'];

/** Every message the operator sent, in any conversation. */
async function operatorMessages(garden: Garden): Promise<string[]> {
  const out: string[] = [];
  for (const c of await listConversations(garden.paths)) for (const m of await readConversationMessages(garden.paths, c.id)) if (m.sender === 'operator') out.push(m.text);
  return out;
}

async function open(): Promise<{ garden: Garden; tmux: TmuxSession }> {
  const garden = await makeTestGarden();
  cleanups.push(() => garden.cleanup());
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
  cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
  await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'write the report' });
  await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'other work' });
  const tmux = new TmuxSession();
  cleanups.push(() => tmux.kill());
  tmux.start({
    cwd: garden.paths.gardenRoot,
    env: { PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' },
    argv: [process.execPath, PAK2_BIN],
    columns: 120,
    rows: 36,
  });
  await tmux.waitFor('both goals done', (s) => goalRows(s).filter((r) => r.status === 'closed:success').length === 2 && /coordinator idle/.test(statusLine(s)));
  return { garden, tmux };
}

describe('the workbench’s text inputs in a real terminal', () => {
  it('focus, cursor-position, mouse and device-attribute reports typed into the filter are dropped: it still matches', async () => {
    const { tmux } = await open();
    // Two keys in one read (send-keys -l jj) are two presses in the goals list: the run pane follows the second goal.
    const rows = goalRows(tmux.capture());
    tmux.type('jj');
    await tmux.waitFor('the run pane to follow the second goal', (s) => s.includes(`─ Run ${rows[1]!.id}-r1 `));
    tmux.keys('/');
    await tmux.waitFor('the filter field', (s) => s.includes('matching /█'));
    tmux.type('re');
    tmux.type('\x1b[I'); // focus in
    tmux.type('p\x1b[24;80R'); // a cursor-position report
    tmux.type('\x1b[<0;10;5M'); // an SGR mouse press
    tmux.type('o\x1b[M !!'); // an X10 mouse report: ESC [ M and three bytes
    tmux.type('\x1b[?1;2c'); // device attributes
    tmux.type('r\x1b[O'); // focus out
    tmux.type('t');
    const screen = await tmux.waitFor('the filter to match', (s) => (s.includes('1 matching /report█') ? s : undefined));
    show('filtered', screen);
    expect(goalRows(screen).map((r) => r.id)).toEqual(['1-write-the-report']);
    expect(screen).not.toMatch(/\[I|\[O|24;80R|\?1;2c|<0;10;5M/);
    tmux.keys('Escape');
    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
  }, 90_000);

  it('four lines pasted into the chat input (bracketed, then typed fast) are sent as one message each, line breaks kept', async () => {
    const { garden, tmux } = await open();
    // A paste as the terminal does it: tmux brackets it because the workbench asked for bracketed paste.
    tmux.keys('c');
    await tmux.waitFor('the chat input', (s) => s.includes('› █'));
    // A lone pasted line break is text only when the paste is bracketed: it must not send.
    tmux.tmux('set-buffer', '-b', 'newline', '\n');
    tmux.tmux('paste-buffer', '-p', '-b', 'newline', '-t', tmux.target);
    await tmux.waitFor('the line break in the input', (s) => /│ › +│\n[^\n]*│ {3}█/.test(s));
    expect(await operatorMessages(garden)).toEqual([]);
    tmux.keys('BSpace');
    await tmux.waitFor('the line break deleted', (s) => s.includes('› █'));
    tmux.tmux('set-buffer', '-b', 'four', FOUR_LINES.join('\n'));
    tmux.tmux('paste-buffer', '-p', '-b', 'four', '-t', tmux.target);
    const pasted = await tmux.waitFor('the pasted lines in the input', (s) => (s.includes('3. both only on CI█') ? s : undefined));
    show('pasted', pasted);
    expect(pasted).not.toContain('UTC+132.');
    tmux.keys('Enter');
    await tmux.waitFor('the message sent', (s) => statusLine(s).includes('message sent'));
    // Typed fast: the lines arrive in one read, separated by carriage returns.
    tmux.keys('c');
    await tmux.waitFor('the chat input', (s) => s.includes('› █'));
    tmux.type(FOUR_LINES.join('\r'));
    await tmux.waitFor('the typed lines in the input', (s) => s.includes('3. both only on CI█'));
    tmux.keys('Enter');
    let messages: string[] = [];
    await tmux.waitFor('both messages stored', () => {
      void operatorMessages(garden).then((m) => (messages = m));
      return messages.length >= 2;
    });
    expect(messages).toEqual([FOUR_LINES.join('\n'), FOUR_LINES.join('\n')]);
    // Each message queues a reply goal: quit once they have run (q asks first while a run is live).
    await tmux.waitFor('the replies run', (s) => /coordinator idle · 0 live · 0 queued/.test(statusLine(s)));
    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
  }, 90_000);
});
