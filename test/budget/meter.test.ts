import { describe, expect, it } from 'vitest';
import { getDriverPlugin, priceClaudeUsage } from '../../source/driver/index.js';

describe('spend meters follow a run\'s spend from its stream', () => {
  it('claude: each assistant message priced once at its model\'s rates (a message streamed as several lines counts once), replaced by the provider\'s figure at a result', () => {
    const meter = getDriverPlugin('claude')!.spendMeter!({ model: 'claude-sonnet-4-5' });
    const msg = (id: string, input: number, output: number) => ({ type: 'assistant', message: { id, model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: input, output_tokens: output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }, content: [] } });
    expect(meter.observe({ type: 'system', subtype: 'init' })).toBeUndefined();
    expect(meter.observe(msg('m1', 100_000, 1))).toBe(0.300015);
    // The same message's next content block: not counted again.
    expect(meter.observe(msg('m1', 100_000, 1))).toBeUndefined();
    expect(meter.observe(msg('m2', 200_000, 1000))).toBe(0.915015);
    expect(meter.spend).toMatchObject({ source: 'estimated', usd: 0.915015 });
    expect(meter.observe({ type: 'result', subtype: 'success', total_cost_usd: 0.9, num_turns: 2, usage: {} })).toBe(0.9);
    expect(meter.spend).toEqual({ usd: 0.9, source: 'provider' });
    expect(priceClaudeUsage('a-model-nobody-lists', { input_tokens: 1 })).toBeUndefined();
  });

  it('codex: the turn\'s tokens at turn.completed, less the thread\'s total before (a resumed thread is not charged twice)', () => {
    const meter = getDriverPlugin('codex')!.spendMeter!({ model: 'gpt-5.4', threadBefore: { input_tokens: 1_000_000, cached_input_tokens: 0, output_tokens: 0 } });
    expect(meter.observe({ type: 'item.completed', item: { type: 'agent_message', text: 'x' } })).toBeUndefined();
    expect(meter.observe({ type: 'turn.completed', usage: { input_tokens: 2_000_000, cached_input_tokens: 0, output_tokens: 0 } })).toBe(1.25);
  });

  it('command: the latest usage or result line\'s cost_usd (the run\'s so far)', () => {
    const meter = getDriverPlugin('command')!.spendMeter!({ model: 'default' });
    expect(meter.observe({ type: 'usage', cost_usd: 0.1 })).toBe(0.1);
    expect(meter.observe({ type: 'usage', cost_usd: 0.1 })).toBeUndefined();
    expect(meter.observe({ type: 'usage', cost_usd: -3 })).toBeUndefined();
    expect(meter.observe({ type: 'result', status: 'success', cost_usd: 0.25 })).toBe(0.25);
    expect(meter.spend).toEqual({ usd: 0.25, source: 'provider' });
  });
});
