import type { Cost } from '../contracts/index.js';

/** A launch's spend so far (USD) and how it is known (a driver's spend meter; docs/budget/level2.md). */
export interface LaunchSpend {
  usd: number;
  source: 'provider' | 'estimated' | 'unknown';
  pricing?: string;
}

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

/** USD per one million tokens of a claude model: input, output, cache writes and cache reads. */
export interface ClaudeTokenPrice {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

/**
 * Anthropic's published per-million prices by model family, matched by the
 * longest prefix of the model id (`claude-sonnet-4-5-20250929` is
 * `claude-sonnet-4-5`) or its alias (`sonnet`). Used only to follow a claude
 * run's spend message by message while it runs (docs/budget/level2.md); the
 * recorded cost is claude's own `total_cost_usd` when it reports one.
 */
export const CLAUDE_PRICES_PER_MILLION: Readonly<Record<string, ClaudeTokenPrice>> = {
  'claude-opus-4-6': { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  'claude-opus-4-5': { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  'claude-opus-4-1': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-opus-4': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-sonnet-4': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-3-7-sonnet': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-haiku-4-5': { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cacheWrite: 1, cacheRead: 0.08 },
  opus: { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  sonnet: { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  haiku: { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
};

/** The price of a claude model id or alias (longest matching prefix), or undefined for a model not listed. */
export function claudePrice(model: string): ClaudeTokenPrice | undefined {
  let best: string | undefined;
  for (const key of Object.keys(CLAUDE_PRICES_PER_MILLION)) if (model.startsWith(key) && (!best || key.length > best.length)) best = key;
  return best ? CLAUDE_PRICES_PER_MILLION[best] : undefined;
}

/**
 * Prices one claude message's `usage` (input, output, cache creation and
 * cache read tokens) at its model's rates.
 *
 * @returns USD, or undefined for a model not in {@link CLAUDE_PRICES_PER_MILLION}.
 */
export function priceClaudeUsage(model: string, usage: { input_tokens?: number; output_tokens?: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number }): number | undefined {
  const price = claudePrice(model);
  if (!price) return undefined;
  const usd = ((usage.input_tokens ?? 0) * price.input + (usage.output_tokens ?? 0) * price.output + (usage.cache_creation_input_tokens ?? 0) * price.cacheWrite + (usage.cache_read_input_tokens ?? 0) * price.cacheRead) / 1_000_000;
  return Math.round(usd * 1e8) / 1e8;
}

/** Adds launch spends: the USD summed; `provider` only when every part with a figure is, `unknown` when none has one. */
export function sumSpends(parts: readonly LaunchSpend[]): LaunchSpend {
  const known = parts.filter((p) => p.source !== 'unknown');
  if (known.length === 0) return { usd: 0, source: 'unknown' };
  const usd = Math.round(known.reduce((sum, p) => sum + p.usd, 0) * 1e8) / 1e8;
  const estimated = known.find((p) => p.source === 'estimated');
  return estimated ? { usd, source: 'estimated', ...(estimated.pricing ? { pricing: estimated.pricing } : {}) } : { usd, source: 'provider' };
}
