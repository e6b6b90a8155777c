/**
 * USD per one million tokens, as published by OpenAI for these models
 * (docs/run/level2.md, "Cost"). Used only to estimate codex runs, which report
 * tokens but no cost. A model not listed here gets `{source: "unknown"}`.
 */
export const CODEX_PRICES_PER_MILLION = {
    'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10 },
    'gpt-5-codex': { input: 1.25, cachedInput: 0.125, output: 10 },
    'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
    'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4 },
    'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
    'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6 },
    o3: { input: 2, cachedInput: 0.5, output: 8 },
    'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
};
/**
 * Prices codex token usage from {@link CODEX_PRICES_PER_MILLION}. Cached input
 * tokens are part of input_tokens and billed at the cached rate.
 *
 * @returns `estimated` cost in USD with the tokens, or `unknown` (tokens kept) for an unlisted model.
 */
export function estimateCodexCost(model, usage) {
    const tokens = {
        input_tokens: usage.input_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        output_tokens: usage.output_tokens,
        ...(usage.reasoning_output_tokens !== undefined ? { reasoning_output_tokens: usage.reasoning_output_tokens } : {}),
    };
    const price = CODEX_PRICES_PER_MILLION[model];
    if (!price)
        return { source: 'unknown', ...tokens };
    const uncached = Math.max(0, usage.input_tokens - usage.cached_input_tokens);
    const usd = (uncached * price.input + usage.cached_input_tokens * price.cachedInput + usage.output_tokens * price.output) / 1_000_000;
    return { source: 'estimated', usd: Math.round(usd * 1e8) / 1e8, ...tokens, pricing: `${model} per-million table` };
}
/**
 * Adds the reflection phase's cost to the main phase's. Amounts add when both
 * are known with the same source; otherwise the main phase's cost stands.
 */
export function addCosts(main, extra) {
    if (!extra || extra.source === 'unknown' || extra.source !== main.source)
        return main;
    const sum = (a, b) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));
    const out = { ...main };
    for (const key of ['usd', 'input_tokens', 'output_tokens', 'cached_input_tokens', 'cache_creation_input_tokens', 'reasoning_output_tokens']) {
        const value = sum(main[key], extra[key]);
        if (value !== undefined)
            out[key] = key === 'usd' ? Math.round(value * 1e8) / 1e8 : value;
    }
    return out;
}
//# sourceMappingURL=pricing.js.map