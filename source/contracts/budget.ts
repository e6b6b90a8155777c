import { z } from 'zod';
import { collectIssues, timestamp, type ValidationIssue } from './common.js';

/** The cap keys `pak2 budget set` takes, as in `[budget]` (docs/budget/level2.md). */
export const BUDGET_CAP_KEYS = ['run_usd', 'goal_usd', 'plant_day_usd', 'garden_day_usd', 'garden_month_usd'] as const;
export type BudgetCapKey = (typeof BUDGET_CAP_KEYS)[number];

/**
 * `<runtime-root>/budget.json` (docs/budget/level2.md, "Changing a cap"):
 * caps the operator set with `pak2 budget set`, over `[budget]` in
 * PAK2.toml; `null` lifts a cap. `updated_at` ISO 8601 UTC.
 */
export const BudgetOverridesSchema = z.looseObject({
  caps: z.partialRecord(z.enum(BUDGET_CAP_KEYS), z.number().positive().max(1_000_000).nullable()),
  updated_at: timestamp(),
});
export type BudgetOverrides = z.infer<typeof BudgetOverridesSchema>;

/** Validates budget.json. Never throws. @returns issues (INVALID_SHAPE, INVALID_FIELD_TYPE, INVALID_TIMESTAMP, …). */
export function validateBudgetOverrides(data: unknown): ValidationIssue[] {
  return collectIssues(BudgetOverridesSchema, data);
}

/** `<runtime-root>/budget.warned.json` (docs/budget/level2.md, "Warnings"): `said`, the warning keys already said (`garden_day:2026-12-02`, `goal:3-a`, …), sorted. */
export const BudgetWarnedSchema = z.looseObject({ said: z.array(z.string().min(1)) });

/** Validates budget.warned.json. Never throws. @returns issues (INVALID_SHAPE, MISSING_REQUIRED_FIELD, INVALID_FIELD_TYPE). */
export function validateBudgetWarned(data: unknown): ValidationIssue[] {
  return collectIssues(BudgetWarnedSchema, data);
}
