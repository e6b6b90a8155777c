import { z } from 'zod';
import { codedEnum, codedString, collectIssues, PLANT_NAME_PATTERN, timestamp, type ValidationIssue, lazySchema} from './common.js';

/** Plant statuses. */
export const PLANT_STATUSES = ['active', 'archived'] as const;
export type PlantStatus = (typeof PLANT_STATUSES)[number];

/** The plant record, `plants/<name>/meta.json` (docs/plant/level2.md). */
export const PlantSchema = lazySchema(() =>
  z.looseObject({
    name: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    seed: codedString(PLANT_NAME_PATTERN, 'INVALID_FIELD_TYPE'),
    status: codedEnum(PLANT_STATUSES, 'INVALID_STATUS'),
    commissioned_at: timestamp(),
    archived_at: timestamp().optional(),
    description: z.string().optional(),
  }),
);
export type PlantRecord = z.infer<typeof PlantSchema>;

/**
 * Validates a plant record. Never throws.
 *
 * @returns issues with codes MISSING_REQUIRED_FIELD, INVALID_PLANT_NAME,
 *   INVALID_STATUS, INVALID_TIMESTAMP, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validatePlant(data: unknown): ValidationIssue[] {
  return collectIssues(PlantSchema, data);
}
