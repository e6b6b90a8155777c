import path from 'node:path';
import { formatIssue, validateBudgetOverrides, validateBudgetWarned, type BudgetCapKey, type BudgetOverrides } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readJsonFile, StoreError, writeJsonAtomic } from './files.js';
import { storeOf } from './backend.js';
import { GARDEN_KEY, storedWhere } from './documents.js';
import { storedRead } from './goals.js';

/** `<runtime-root>/budget.json`: caps set with `pak2 budget set` (docs/budget/level2.md). */
export function budgetOverridesFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'budget.json');
}

/** `<runtime-root>/budget.warned.json`: the warning keys already said, so each cap warns once per period. */
export function budgetWarnedFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'budget.warned.json');
}

/**
 * The caps the operator set (none when the file is absent).
 *
 * @throws StoreError INVALID_RECORD naming the file and field when budget.json is malformed.
 */
export async function readBudgetOverrides(paths: GardenPaths): Promise<Partial<Record<BudgetCapKey, number | null>>> {
  const store = storeOf(paths);
  const file = store ? storedWhere(store.where, 'budget.json') : budgetOverridesFile(paths);
  const read = store ? storedRead(await store.documentRecord('budget', GARDEN_KEY)) : await readJsonFile(file);
  if (!read.ok) {
    if (read.missing) return {};
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateBudgetOverrides(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return (read.value as BudgetOverrides).caps;
}

/** Sets (a number, USD), lifts (`null`) or drops (`undefined`: PAK2.toml's applies) one cap in budget.json, keeping the others; atomic. */
export async function writeBudgetOverride(paths: GardenPaths, key: BudgetCapKey, usd: number | null | undefined, now: Date): Promise<void> {
  const store = storeOf(paths);
  const write = async (): Promise<void> => {
    const caps: Partial<Record<BudgetCapKey, number | null>> = { ...(await readBudgetOverrides(paths)) };
    if (usd === undefined) delete caps[key];
    else caps[key] = usd;
    const next: BudgetOverrides = { caps, updated_at: now.toISOString() };
    if (store) await store.putDocument('budget', GARDEN_KEY, next);
    else await writeJsonAtomic(budgetOverridesFile(paths), next);
  };
  // Servers on one database may set two caps at once: neither is lost.
  if (store) await store.withDocumentLock('budget', GARDEN_KEY, write);
  else await write();
}

/** The warning keys already said (an unreadable file reads as none: a warning said twice beats one never said). */
export async function readBudgetWarned(paths: GardenPaths): Promise<Set<string>> {
  const store = storeOf(paths);
  const read = store ? storedRead(await store.documentRecord('budget-warned', GARDEN_KEY)) : await readJsonFile(budgetWarnedFile(paths));
  return new Set(read.ok && validateBudgetWarned(read.value).length === 0 ? (read.value as { said: string[] }).said : []);
}

/** Keeps the warning keys said (the caller keeps only the current periods'). */
export async function writeBudgetWarned(paths: GardenPaths, keys: Iterable<string>): Promise<void> {
  const store = storeOf(paths);
  if (store) await store.putDocument('budget-warned', GARDEN_KEY, { said: [...keys].sort() });
  else await writeJsonAtomic(budgetWarnedFile(paths), { said: [...keys].sort() });
}
