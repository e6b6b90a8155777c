/**
 * Bidi controls and other invisible characters an agent writes (U+202E and
 * the rest: Trojan Source) never reach the terminal from the workbench
 * (issue 28): the panes and overlays print them as `\u202e`, as the CLI
 * does (docs/run/level2.md, "Printed text"), so a terminal that reorders
 * bidi text never reverses what follows.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it } from 'vitest';
import type { TailState } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';

const HIDDEN = /[\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/;
const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined };

function tailWith(runId: string, texts: string[]): TailState {
  return { runId, file: `/g/.runtime/runs/${runId}/events.jsonl`, lines: texts.map((text) => ({ kind: 'text' as const, text })), usage: { inputTokens: 0, outputTokens: 0, costUsd: undefined }, bytes: 0, truncated: false };
}

describe('the workbench shows bidi controls and hidden characters, never sends them', () => {
  it('the run tail, the chat and the goal detail print U+202E and the rest as escapes', async () => {
    const g = goal(1, { body: 'body \u202eevil\u202c ok', status: 'closed', closed_reason: 'success', closed_at: new Date(NOW).toISOString() });
    const r = run(g.id, { status: 'success', completed_at: new Date(NOW).toISOString(), outputs: { final_text: 'final \u2067iso\u2069 \u200bzw' } });
    const snapshot = snapshotOf({
      goals: [{ goal: g, run: r }],
      counts: { queued: 0, inFlight: 0, closedShown: 1 },
      tail: tailWith(r.id, ['tail \u202eevil\u202c end', 'bom\ufeff ls\u2028x']),
      chat: { conversationId: 'c1', messages: [{ ts: new Date(NOW).toISOString(), sender: 'garden', text: 'chat \u202eevil\u202c', run: r.id }] },
    });
    const ui = render(<App store={fixedStore(snapshot)} actions={actions} size={{ columns: 120, rows: 30 }} now={NOW} />);
    await tick();
    const frame = ui.lastFrame()!;
    expect(HIDDEN.test(frame), 'the panes printed a hidden character').toBe(false);
    const text = plain(frame);
    expect(text).toContain('tail \\u202eevil\\u202c end');
    expect(text).toContain('bom\\ufeff ls\\u2028x');
    expect(text).toContain('chat \\u202eevil\\u202c');
    ui.stdin.write('\r'); // the selected goal's detail
    await tick();
    const detail = ui.lastFrame()!;
    expect(HIDDEN.test(detail), 'the detail printed a hidden character').toBe(false);
    expect(plain(detail)).toContain('body \\u202eevil\\u202c ok');
    expect(plain(detail)).toContain('final \\u2067iso\\u2069 \\u200bzw');
    ui.unmount();
  });
});
