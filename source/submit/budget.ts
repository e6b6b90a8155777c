import { BUDGET_CAP_KEYS, type BudgetCapKey } from '../contracts/index.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { CAP_KEYS, capsFor } from '../budget/index.js';
import { appendEvent, readBudgetOverrides, StoreError, writeBudgetOverride } from '../store/index.js';

/** What setting a cap did: the cap, its amount before and now (USD; `null` lifted, `undefined` none), and whether a coordinator was told. */
export interface SetCapResult {
  key: BudgetCapKey;
  before: number | null | undefined;
  after: number | null;
  woke: boolean;
}

/**
 * Sets or lifts one budget cap over PAK2.toml's `[budget]` (docs/budget/level2.md,
 * "Changing a cap"): `<runtime-root>/budget.json`, a `BudgetChanged` event,
 * and the running coordinator woken, so goals a raised cap no longer holds
 * dispatch in its next pass. PAK2.toml itself is never rewritten.
 *
 * @param value USD as text (`20`, `12.50`), `off` to lift the cap, or `config` to drop the set value (PAK2.toml's applies again).
 * @throws UserError (exit 2) naming the argument: an unknown cap key, or an amount that is not a positive number of USD up to 1000000; (exit 1) budget.json cannot be read (it is never written over).
 */
export async function setBudgetCap(garden: Garden, key: string, value: string, by = 'operator', now = new Date()): Promise<SetCapResult> {
  if (!(BUDGET_CAP_KEYS as readonly string[]).includes(key)) throw new UserError(`CAP ${JSON.stringify(key)}: not a budget cap; one of ${BUDGET_CAP_KEYS.join(', ')}`, { exitCode: 2 });
  const usd = value === 'off' ? null : value === 'config' ? undefined : parseUsd(value);
  if (usd === undefined && value !== 'config') {
    throw new UserError(`USD ${JSON.stringify(value)}: an amount in USD greater than 0 and at most 1000000 (e.g. 20 or 12.50), "off" to lift the cap, or "config" to go back to PAK2.toml's`, { exitCode: 2 });
  }
  const cap = key as BudgetCapKey;
  let before: number | null | undefined;
  try {
    before = (await readBudgetOverrides(garden.paths))[cap];
  } catch (error) {
    // Never written over: the caps the operator set are in it.
    if (error instanceof StoreError) throw new UserError(`budget.json cannot be read (${error.message}); fix or remove it, then set the cap again`, { exitCode: 1 });
    throw error;
  }
  await writeBudgetOverride(garden.paths, cap, usd, now);
  const fromConfig = capsFor(garden.config.budget, {}).find((c) => CAP_KEYS[c.name] === cap)?.usd;
  const was = before === undefined ? fromConfig : before;
  const after = usd === undefined ? (fromConfig ?? null) : usd;
  const words = (n: number | null | undefined) => (n === null || n === undefined ? 'none' : `$${n.toFixed(2)}`);
  const what = usd === undefined ? `back to PAK2.toml's (${words(fromConfig)})` : usd === null ? 'lifted' : `set to ${words(usd)}`;
  await appendEvent(garden.paths, { type: 'BudgetChanged', reason: cap, detail: `${cap} ${what} by ${by} (was ${words(was)}${before === undefined ? ' from PAK2.toml' : ''})` }, now);
  const { coordinatorSocketName, requestCoordinator } = await import('../coordinator/lock.js');
  const reply = await requestCoordinator(coordinatorSocketName(garden.paths), { op: 'wake' });
  return { key: cap, before: was, after, woke: Boolean(reply?.ok) };
}

/**
 * An amount of USD as an operator writes it (`20`, `12.50`): digits with an
 * optional fraction, greater than 0, at most 1,000,000.
 *
 * @returns the amount, or undefined for anything else (`-3`, `1e3`, `ten`, `0`).
 */
export function parseUsd(text: string): number | undefined {
  const usd = Number(text);
  return /^\d+(\.\d+)?$/.test(text.trim()) && usd > 0 && usd <= 1_000_000 ? usd : undefined;
}
