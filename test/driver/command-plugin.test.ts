/**
 * The command driver's reading of its agent's lines (docs/run/level2.md,
 * "The command driver" and "When a run has ended"): the last result's text
 * stands over text printed after it, and only an ending status ends a task.
 */
import { describe, expect, it } from 'vitest';
import { commandPlugin } from '../../source/driver/plugins/command.js';
import { RunLiveness } from '../../source/driver/liveness.js';

const plugin = commandPlugin('w');
const parse = (lines: unknown[]) => plugin.parseEvents(lines, { phase: 'main', runDir: '/nowhere', model: 'default' });

describe('command driver: the last result decides the final text', () => {
  it('text printed after the result is progress, not the answer', () => {
    const parsed = parse([{ type: 'result', status: 'success', text: 'Done: fixed the date test', cost_usd: 0.1 }, { type: 'text', text: 'cleaning up temp files' }]);
    expect(parsed).toMatchObject({ status: 'success', finalText: 'Done: fixed the date test', cost: { source: 'provider', usd: 0.1 } });
  });

  it('a result without text keeps the agent\'s last text; no result at all keeps the last text', () => {
    expect(parse([{ type: 'text', text: 'the answer' }, { type: 'result', status: 'success', cost_usd: 0.1 }]).finalText).toBe('the answer');
    expect(parse([{ type: 'text', text: 'first' }, { type: 'text', text: 'last' }]).finalText).toBe('last');
  });

  it('a later result still replaces an earlier one, text included', () => {
    const parsed = parse([{ type: 'result', status: 'success', text: 'interim', cost_usd: 0.1 }, { type: 'text', text: 'working' }, { type: 'result', status: 'success', text: 'final', cost_usd: 0.3 }]);
    expect(parsed).toMatchObject({ finalText: 'final', cost: { usd: 0.3 } });
  });
});

describe('command driver: only completed, failed or stopped ends a task', () => {
  it('a progress line of a task (status "running") leaves it open work for the linger and the watchdog', () => {
    const classify = plugin.classifier!();
    const liveness = new RunLiveness(0);
    liveness.observe(classify({ type: 'task', id: 't1', status: 'started', task_type: 'local_bash', description: 'build' }), 1);
    liveness.observe(classify({ type: 'task', id: 't1', status: 'running', progress: 50 }), 2);
    liveness.observe(classify({ type: 'result', status: 'success', text: 'reported', cost_usd: 0.1 }), 3);
    expect(liveness.openWork).toBe(1);
    liveness.observe(classify({ type: 'task', id: 't1', status: 'completed' }), 4);
    expect(liveness.openWork).toBe(0);
  });

  it('the record keeps the task\'s real end, not its progress status', () => {
    const parsed = parse([
      { type: 'task', id: 't1', status: 'started', task_type: 'local_bash', description: 'build' },
      { type: 'task', id: 't1', status: 'running', progress: 50 },
      { type: 'result', status: 'success', text: 'reported', cost_usd: 0.1 },
      { type: 'task', id: 't1', status: 'completed' },
      { type: 'text', text: 'saw it complete' },
    ]);
    expect(parsed.backgroundTasks).toEqual([{ id: 't1', type: 'local_bash', description: 'build', status: 'completed' }]);
    expect(parsed.finalText).toBe('reported');
  });

  it('a task whose only later line is progress never finished', () => {
    const parsed = parse([
      { type: 'task', id: 't1', status: 'started', task_type: 'local_bash', description: 'build' },
      { type: 'task', id: 't1', status: 'running' },
      { type: 'result', status: 'success', text: 'reported', cost_usd: 0.1 },
    ]);
    expect(parsed.backgroundTasks).toEqual([{ id: 't1', type: 'local_bash', description: 'build', status: 'running', unfinished: true }]);
  });
});
