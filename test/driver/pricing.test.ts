/**
 * Every built-in driver's default model gets a known cost: claude and the
 * command driver report a provider cost; codex reports tokens only, so its
 * default model must be in the price table (source/driver/pricing.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BUILTIN_DRIVERS, getDriverPlugin } from '../../source/driver/plugins/index.js';
import { CODEX_PRICES_PER_MILLION, estimateCodexCost } from '../../source/driver/pricing.js';

const STREAMS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/streams');

function readStream(name: string): unknown[] {
  return fs
    .readFileSync(path.join(STREAMS, name), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as unknown);
}

/** How each built-in driver's cost is known, and a stream of its that reports one. Adding a built-in driver without an entry fails to compile. */
const COST_OF = {
  claude: { source: 'provider', stream: () => readStream('claude-build.jsonl') },
  codex: { source: 'estimated', stream: () => readStream('codex-build.jsonl') },
  command: { source: 'provider', stream: () => [{ type: 'result', status: 'success', text: 'done', cost_usd: 0.02 }] },
} as const satisfies Record<(typeof BUILTIN_DRIVERS)[number], { source: 'provider' | 'estimated'; stream: () => unknown[] }>;

const USAGE = { input_tokens: 12_000, cached_input_tokens: 2_000, output_tokens: 800, reasoning_output_tokens: 300 };

describe('every built-in driver prices its default model', () => {
  it('COST_OF covers exactly the built-in drivers', () => {
    expect(Object.keys(COST_OF).sort()).toEqual([...BUILTIN_DRIVERS].sort());
  });

  it.each(BUILTIN_DRIVERS.map((name) => [name]))('%s: its default model gets a cost with usd > 0 from a stream that reports usage', (name) => {
    const plugin = getDriverPlugin(name)!;
    expect(plugin).toBeDefined();
    const model = plugin.defaultModel;
    expect(model).toEqual(expect.any(String));
    const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-pricing-'));
    try {
      const { cost } = plugin.parseEvents(COST_OF[name].stream(), { phase: 'main', runDir, model: model! });
      expect(cost.source).toBe(COST_OF[name].source);
      expect(cost.usd).toBeGreaterThan(0);
    } finally {
      fs.rmSync(runDir, { recursive: true, force: true });
    }
  });

  it('codex: estimateCodexCost prices the codex plugin’s default model (estimated, usd > 0)', () => {
    const model = getDriverPlugin('codex')!.defaultModel!;
    expect(CODEX_PRICES_PER_MILLION).toHaveProperty([model]);
    const cost = estimateCodexCost(model, USAGE);
    expect(cost.source).toBe('estimated');
    expect(cost.usd).toBeGreaterThan(0);
  });

  it('gpt-5.4 (codex’s default today) is estimated at the gpt-5 family rate', () => {
    // 10k uncached × $1.25 + 2k cached × $0.125 + 800 out × $10, per million tokens.
    expect(estimateCodexCost('gpt-5.4', USAGE)).toMatchObject({ source: 'estimated', usd: (10_000 * 1.25 + 2_000 * 0.125 + 800 * 10) / 1_000_000 });
  });

  it('an unpriced codex slug stays unknown, with its tokens', () => {
    expect(estimateCodexCost('gpt-unlisted', USAGE)).toEqual({ source: 'unknown', ...USAGE });
  });

  it.each(['gpt-5.1', 'gpt-5.1-codex', 'gpt-5.1-codex-max', 'gpt-5.2', 'gpt-5.2-codex', 'gpt-5.3-codex', 'gpt-5.4'].map((m) => [m]))(
    '%s is priced at the gpt-5 family rate',
    (model) => {
      expect(CODEX_PRICES_PER_MILLION[model]).toEqual(CODEX_PRICES_PER_MILLION['gpt-5']);
    },
  );
});
