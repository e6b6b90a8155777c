import { z } from 'zod';
import { ActiveThreadsSchema } from './active-threads.js';
import { ConfigSchema } from './config.js';
import { EventSchema } from './event.js';
import { GoalSchema } from './goal.js';
import { RuntimeHistoryRecordSchema } from './history.js';
import { OperatorMessageSchema } from './operator-message.js';
import { PlantSchema } from './plant.js';
import { RunSchema } from './run.js';

/** The records that get a JSON Schema file in `schema/`, by file name. */
export const SCHEMA_FILES = {
  'run.schema.json': { schema: RunSchema, title: 'pak2 run record (runs/<run-id>/meta.json)' },
  'goal.schema.json': { schema: GoalSchema, title: 'pak2 goal record (goals/<goal-id>.json)' },
  'event.schema.json': { schema: EventSchema, title: 'pak2 coordinator event (events/coordinator.jsonl line)' },
  'plant.schema.json': { schema: PlantSchema, title: 'pak2 plant record (plants/<name>/meta.json)' },
  'config.schema.json': { schema: ConfigSchema, title: 'pak2 garden configuration (PAK2.toml)' },
  'operator-message.schema.json': { schema: OperatorMessageSchema, title: 'pak2 operator message (runs/<run-id>/operator-messages.jsonl line)' },
  'runtime-history.schema.json': { schema: RuntimeHistoryRecordSchema, title: 'pak2 runtime provenance record (history/commits/<run-id>.json)' },
  'active-threads.schema.json': { schema: ActiveThreadsSchema, title: 'pak2 plant active threads (plants/<name>/memory/active-threads.json)' },
} as const;

/**
 * Renders every record's JSON Schema (draft 2020-12) from its zod schema, as
 * the exact text written to `schema/`. Conditional rules (terminal runs need
 * completed_at and cost, …) live in the validators, not in these files.
 */
export function renderSchemas(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [file, { schema, title }] of Object.entries(SCHEMA_FILES)) {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
    out[file] = `${JSON.stringify({ $id: `urn:pak2:schema:${file}`, title, ...json }, null, 2)}\n`;
  }
  return out;
}
