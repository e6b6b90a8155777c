import { BUDGET_CAP_KEYS, type BudgetCapKey } from '../contracts/index.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { appendEvent, readBudgetOverrides, writeBudgetOverride } from '../store/index.js';

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
 * @param value USD as text (`20`, `12.50`), or `off` to lift the cap.
 * @throws UserError (exit 2) naming the argument: an unknown cap key, or an amount that is not a positive number of USD.
 */
export async function setBudgetCap(garden: Garden, key: string, value: string, by = 'operator', now = new Date()): Promise<SetCapResult> {
  if (!(BUDGET_CAP_KEYS as readonly string[]).includes(key)) throw new UserError(`CAP ${JSON.stringify(key)}: not a budget cap; one of ${BUDGET_CAP_KEYS.join(', ')}`, { exitCode: 2 });
  const usd = value === 'off' ? null : Number(value);
  if (usd !== null && (!/^\d+(\.\d+)?$/.test(value.trim()) || !(usd > 0) || usd > 1_000_000)) throw new UserError(`USD ${JSON.stringify(value)}: an amount in USD greater than 0 (e.g. 20 or 12.50), or "off" to lift the cap`, { exitCode: 2 });
  const cap = key as BudgetCapKey;
  const before = (await readBudgetOverrides(garden.paths))[cap];
  await writeBudgetOverride(garden.paths, cap, usd, now);
  const was = before === undefined ? (garden.config.budget as unknown as Record<string, number | undefined>)[camel(cap)] : before;
  const words = (n: number | null | undefined) => (n === null || n === undefined ? 'none' : `$${n.toFixed(2)}`);
  await appendEvent(garden.paths, { type: 'BudgetChanged', reason: cap, detail: `${cap} ${usd === null ? 'lifted' : `set to ${words(usd)}`} by ${by} (was ${words(was)}${before === undefined ? ' from PAK2.toml' : ''})` }, now);
  const { coordinatorSocketName, requestCoordinator } = await import('../coordinator/lock.js');
  const reply = await requestCoordinator(coordinatorSocketName(garden.paths), { op: 'wake' });
  return { key: cap, before: was, after: usd, woke: Boolean(reply?.ok) };
}

/** `garden_day_usd` → `gardenDayUsd` (the key of the loaded config). */
function camel(key: string): string {
  return key.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}
