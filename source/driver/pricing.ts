import type { Cost } from '../contracts/index.js';

/** USD per one million input, cached input and output tokens. */
export interface TokenPrice {
  input: number;
  cachedInput: number;
  output: number;
}

/** OpenAI's published gpt-5 price, also used for the later gpt-5.x slugs codex offers. */
const GPT5_FAMILY: TokenPrice = { input: 1.25, cachedInput: 0.125, output: 10 };

/**
 * USD per one million tokens (docs/run/level2.md, "Cost"). Used only to
 * estimate codex runs, which report tokens but no cost. A model not listed
 * here gets `{source: "unknown"}`. The gpt-5 entries are OpenAI's published
 * prices; the gpt-5.x slugs codex offers (its default `gpt-5.4` among them)
 * are priced at that gpt-5 family rate, an estimate rather than a published
 * per-model price.
 */
export const CODEX_PRICES_PER_MILLION: Readonly<Record<string, TokenPrice>> = {
  'gpt-5': GPT5_FAMILY,
  'gpt-5-codex': GPT5_FAMILY,
  'gpt-5.1': GPT5_FAMILY,
  'gpt-5.1-codex': GPT5_FAMILY,
  'gpt-5.1-codex-max': GPT5_FAMILY,
  'gpt-5.2': GPT5_FAMILY,
  'gpt-5.2-codex': GPT5_FAMILY,
  'gpt-5.3-codex': GPT5_FAMILY,
  'gpt-5.4': GPT5_FAMILY,
  'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
  'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4 },
  'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
  'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
};

/** Token counts as a codex `turn.completed` reports them. */
export interface TokenUsage {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens?: number;
}

/**
 * Prices codex token usage from {@link CODEX_PRICES_PER_MILLION}. Cached input
 * tokens are part of input_tokens and billed at the cached rate.
 *
 * @returns `estimated` cost in USD with the tokens, or `unknown` (tokens kept) for an unlisted model.
 */
export function estimateCodexCost(model: string, usage: TokenUsage): Cost {
  const tokens = {
    input_tokens: usage.input_tokens,
    cached_input_tokens: usage.cached_input_tokens,
    output_tokens: usage.output_tokens,
    ...(usage.reasoning_output_tokens !== undefined ? { reasoning_output_tokens: usage.reasoning_output_tokens } : {}),
  };
  const price = CODEX_PRICES_PER_MILLION[model];
  if (!price) return { source: 'unknown', ...tokens };
  const uncached = Math.max(0, usage.input_tokens - usage.cached_input_tokens);
  const usd = (uncached * price.input + usage.cached_input_tokens * price.cachedInput + usage.output_tokens * price.output) / 1_000_000;
  return { source: 'estimated', usd: Math.round(usd * 1e8) / 1e8, ...tokens, pricing: `${model} per-million table` };
}

/**
 * Adds the reflection phase's cost to the main phase's (USD and tokens).
 * Both known: the sum (`estimated` when the sources differ). One unknown:
 * the known one with `partial: true`, since the total is then a lower bound.
 */
export function addCosts(main: Cost, extra: Cost | undefined): Cost {
  if (!extra) return main;
  // One part without a cost: the other part's amount is a lower bound, said so.
  if (extra.source === 'unknown') return main.source === 'unknown' ? main : { ...main, partial: true };
  if (main.source === 'unknown') return { ...extra, partial: true };
  const sum = (a?: number, b?: number) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));
  // provider + estimated is an estimate as a whole.
  const out: Cost = { ...main, source: main.source === extra.source ? main.source : 'estimated' };
  for (const key of ['usd', 'input_tokens', 'output_tokens', 'cached_input_tokens', 'cache_creation_input_tokens', 'reasoning_output_tokens'] as const) {
    const value = sum(main[key], extra[key]);
    if (value !== undefined) out[key] = key === 'usd' ? Math.round(value * 1e8) / 1e8 : value;
  }
  if (main.partial || extra.partial) out.partial = true;
  return out;
}
