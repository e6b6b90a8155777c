import { describe, expect, it } from 'vitest';
import { decideLinger, decideWatchdog, RunLiveness } from '../../source/driver/liveness.js';
import { claudePlugin, codexPlugin } from '../../source/driver/plugins/index.js';

describe('watchdog liveness (docs/run/level2.md, "Watchdog")', () => {
  it('decideWatchdog: watchdog_seconds without an open tool, tool_silence_seconds with one', () => {
    const base = { nowMs: 100_000, lastActivityMs: 90_000, watchdogSeconds: 8, toolSilenceSeconds: 60 };
    expect(decideWatchdog({ ...base, toolOpen: false })).toEqual({ kill: true, silentMs: 10_000, limitSeconds: 8, limitName: 'watchdog_seconds' });
    expect(decideWatchdog({ ...base, toolOpen: true })).toEqual({ kill: false, silentMs: 10_000, limitSeconds: 60, limitName: 'tool_silence_seconds' });
    // A tool silence shorter than the watchdog never shortens it.
    expect(decideWatchdog({ ...base, toolOpen: true, toolSilenceSeconds: 2 }).limitSeconds).toBe(8);
  });

  it('claude: tool_use opens a tool, its tool_result closes it, api_retry is not progress, result is terminal', () => {
    const live = new RunLiveness(0);
    const c = claudePlugin.classifier!();
    live.observe(c({ type: 'assistant', message: { content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash' }] } }), 1000);
    expect([...live.openTools.entries()]).toEqual([['toolu_1', 'assistant tool_use Bash']]);
    live.observe(c({ type: 'system', subtype: 'api_retry' }), 5000);
    expect(live).toMatchObject({ lastProgressAt: 1000, lastLineAt: 5000, lastEvent: 'system api_retry' });
    live.observe(c({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1' }] } }), 6000);
    expect(live.openTools.size).toBe(0);
    live.observe(c({ type: 'result', subtype: 'success' }), 7000);
    expect(live.terminalAt).toBe(7000);
  });

  it('codex: command_execution items open and close a tool, Reconnecting errors are not progress, turn.completed is terminal', () => {
    const live = new RunLiveness(0);
    const c = codexPlugin.classifier!();
    live.observe(c({ type: 'item.started', item: { id: 'item_3', type: 'command_execution', command: 'sleep 600' } }), 1000);
    expect(live.openTools.has('item_3')).toBe(true);
    live.observe(c({ type: 'error', message: 'Reconnecting... 2/5 (stream disconnected)' }), 2000);
    expect(live.lastProgressAt).toBe(1000);
    live.observe(c({ type: 'item.completed', item: { id: 'item_3', type: 'command_execution' } }), 3000);
    expect(live.openTools.size).toBe(0);
    live.observe(c({ type: 'turn.completed', usage: {} }), 4000);
    expect(live).toMatchObject({ lastProgressAt: 4000, terminalAt: 4000, lastEvent: 'turn.completed' });
  });

  it('decideLinger: nothing before a result stands; the grace counts from the last progress with nothing open; the cap holds whatever is open, and while the reader is behind', () => {
    const base = { nowMs: 100_000, reportedAtMs: 90_000, lastProgressAtMs: 95_000, openWork: 0, graceMs: 10_000, capMs: 60_000 };
    expect(decideLinger({ ...base, reportedAtMs: undefined })).toBeUndefined();
    expect(decideLinger(base)).toBeUndefined(); // 5 s since the last progress
    expect(decideLinger({ ...base, nowMs: 100_001, lastProgressAtMs: 89_000 })).toBe('grace'); // just over 10 s since the result, no progress after it
    expect(decideLinger({ ...base, lastProgressAtMs: 80_000, openWork: 1 })).toBeUndefined(); // a task is open
    expect(decideLinger({ ...base, nowMs: 151_000, openWork: 2 })).toBe('cap');
    // A reader behind a flood judges no grace (Infinity), yet the cap still comes.
    expect(decideLinger({ ...base, lastProgressAtMs: 0, graceMs: Number.POSITIVE_INFINITY })).toBeUndefined();
    expect(decideLinger({ ...base, nowMs: 151_000, graceMs: Number.POSITIVE_INFINITY })).toBe('cap');
  });

  it('claude: a task notification ends a task and resumes the turn; a zero-turn drain result is not terminal; a subagent line resumes nothing', () => {
    const live = new RunLiveness(0);
    const c = claudePlugin.classifier!();
    live.observe(c({ type: 'system', subtype: 'task_started', task_id: 'a1', task_type: 'local_agent', description: 'review' }), 1000);
    expect(live.openWork).toBe(1);
    live.observe(c({ type: 'result', subtype: 'success', num_turns: 2 }), 2000);
    expect(live.reportedAt).toBe(2000);
    live.observe(c({ type: 'assistant', parent_tool_use_id: 'toolu_1', message: { content: [{ type: 'text', text: 'subagent says' }] } }), 2500);
    expect(live.reportedAt).toBe(2000);
    live.observe(c({ type: 'system', subtype: 'task_notification', task_id: 'a1', status: 'completed' }), 3000);
    expect(live.openWork).toBe(0);
    expect(live.reportedAt).toBeUndefined();
    live.observe(c({ type: 'result', subtype: 'success', num_turns: 0, origin: { kind: 'task-notification' } }), 4000);
    expect(live.reportedAt).toBeUndefined();
    live.observe(c({ type: 'assistant', message: { content: [{ type: 'text', text: 'done' }] } }), 5000);
    live.observe(c({ type: 'result', subtype: 'success', num_turns: 1 }), 6000);
    expect(live.reportedAt).toBe(6000);
  });
});
