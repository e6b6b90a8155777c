import { z } from 'zod';
import {
  codedEnum,
  codedString,
  collectIssues,
  GOAL_ID_PATTERN,
  PLANT_NAME_PATTERN,
  RUN_ID_PATTERN,
  timestamp,
  type ValidationIssue,
  lazySchema,
} from './common.js';
import { GOAL_TYPES } from './goal.js';

/**
 * Operator-message kinds (seed 002, operator_messages.py): the two
 * gardener-authored notes that go to the operator through the validated
 * Operator Messages surface instead of raw inbox writes.
 * - `tend_survey`: what a tend pass found, with goals it suggests
 * - `recently_concluded`: a digest of goals that recently concluded
 */
export const OPERATOR_MESSAGE_KINDS = ['tend_survey', 'recently_concluded'] as const;
export type OperatorMessageKind = (typeof OPERATOR_MESSAGE_KINDS)[number];

/** The plant that owns the surface: only a run of this plant may emit (docs/operator-message/level2.md). */
export const OPERATOR_MESSAGE_OWNER = 'gardener';

/** Size bounds of one operator message. Characters are UTF-16 code units; bytes are UTF-8. */
export const OPERATOR_MESSAGE_LIMITS = {
  titleChars: 120,
  bodyBytes: 16 * 1024,
  findings: 50,
  findingChars: 500,
  suggestedGoals: 10,
  suggestedGoalBodyBytes: 4 * 1024,
  goals: 100,
} as const;

/** Fields that belong to one kind only; the other kind must not carry them. */
export const KIND_FIELDS: Readonly<Record<OperatorMessageKind, readonly string[]>> = {
  tend_survey: ['findings', 'suggested_goals'],
  recently_concluded: ['goals'],
};

/** Fields a kind requires (beyond the common ones). */
const REQUIRED_KIND_FIELDS: Readonly<Record<OperatorMessageKind, readonly string[]>> = {
  tend_survey: ['findings'],
  recently_concluded: ['goals'],
};

const RUN_ID_SOURCE = '[1-9][0-9]*-[a-z0-9]+(?:-[a-z0-9]+)*-r[1-9][0-9]*';
/** Operator-message id: `om-<run-id>-<n>`, n counting from 1 within the run. */
export const OPERATOR_MESSAGE_ID_PATTERN = new RegExp(`^om-(${RUN_ID_SOURCE})-([1-9][0-9]*)$`);

/** The id of the `n`th operator message of `runId`. */
export function operatorMessageId(runId: string, n: number): string {
  return `om-${runId}-${n}`;
}

/** Splits an operator-message id into its run id and sequence number; undefined when malformed. */
export function parseOperatorMessageId(id: string): { run: string; n: number } | undefined {
  const m = OPERATOR_MESSAGE_ID_PATTERN.exec(id);
  return m ? { run: m[1]!, n: Number(m[2]) } : undefined;
}

const utf8 = new TextEncoder();
/** UTF-8 byte length of a string. */
function bytes(text: string): number {
  return utf8.encode(text).length;
}

const typeError = (iss: { input?: unknown }) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE');

/** A non-blank string (whitespace alone counts as absent). */
function text() {
  return z.string({ error: typeError }).refine((s) => s.trim() !== '', { error: 'MISSING_REQUIRED_FIELD' });
}

/** One goal a tend survey suggests the operator queue: a goal type and a task body. */
export const SuggestedGoalSchema = lazySchema(() =>
  z.looseObject({
    type: codedEnum(GOAL_TYPES, 'INVALID_GOAL_TYPE'),
    body: text().refine((s) => bytes(s) <= OPERATOR_MESSAGE_LIMITS.suggestedGoalBodyBytes, { error: 'MESSAGE_TOO_LARGE' }),
  }),
);
export type SuggestedGoal = z.infer<typeof SuggestedGoalSchema>;

/**
 * One operator message, a line of `<runtime-root>/runs/<run-id>/operator-messages.jsonl`
 * (docs/operator-message/level2.md). The kind-specific fields are optional
 * here; {@link validateOperatorMessage} requires them per kind. Unknown
 * fields are kept and ignored by readers.
 */
export const OperatorMessageSchema = lazySchema(() =>
  z.looseObject({
    id: codedString(OPERATOR_MESSAGE_ID_PATTERN, 'INVALID_ID_FORMAT'),
    run: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT'),
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    kind: codedEnum(OPERATOR_MESSAGE_KINDS, 'INVALID_MESSAGE_KIND'),
    title: text()
      .max(OPERATOR_MESSAGE_LIMITS.titleChars, { error: 'MESSAGE_TOO_LARGE' })
      .regex(/^[^\u0000-\u001f\u007f\u2028\u2029]*$/, { error: 'INVALID_TITLE' }),
    body: text().refine((s) => bytes(s) <= OPERATOR_MESSAGE_LIMITS.bodyBytes, { error: 'MESSAGE_TOO_LARGE' }),
    emitted_at: timestamp(),
    // tend_survey
    findings: z
      .array(text().max(OPERATOR_MESSAGE_LIMITS.findingChars, { error: 'MESSAGE_TOO_LARGE' }), { error: typeError })
      .max(OPERATOR_MESSAGE_LIMITS.findings, { error: 'MESSAGE_TOO_LARGE' })
      .optional(),
    suggested_goals: z
      .array(SuggestedGoalSchema, { error: typeError })
      .max(OPERATOR_MESSAGE_LIMITS.suggestedGoals, { error: 'MESSAGE_TOO_LARGE' })
      .optional(),
    // recently_concluded
    goals: z
      .array(codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'), { error: typeError })
      .min(1, { error: 'MISSING_REQUIRED_FIELD' })
      .max(OPERATOR_MESSAGE_LIMITS.goals, { error: 'MESSAGE_TOO_LARGE' })
      .optional(),
  }),
);
export type OperatorMessage = z.infer<typeof OperatorMessageSchema>;

function present(record: Record<string, unknown>, key: string): boolean {
  return record[key] !== undefined && record[key] !== null;
}

/**
 * Validates one operator message (docs/operator-message/level2.md). Never
 * throws.
 *
 * @returns every issue, `[]` when valid. Codes: MISSING_REQUIRED_FIELD,
 *   INVALID_ID_FORMAT (`id` not `om-<run>-<n>` of the record's own `run`;
 *   `run` not `N-slug-rN`), INVALID_PLANT_NAME, INVALID_MESSAGE_KIND,
 *   INVALID_TITLE (a line break or control character), MESSAGE_TOO_LARGE
 *   (a bound of {@link OPERATOR_MESSAGE_LIMITS} exceeded), INVALID_TIMESTAMP,
 *   INVALID_GOAL_TYPE (`suggested_goals.N.type`), INVALID_GOAL_FORMAT
 *   (`goals.N`), KIND_FIELD_MISMATCH (a field of the other kind),
 *   INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateOperatorMessage(data: unknown): ValidationIssue[] {
  const issues = collectIssues(OperatorMessageSchema, data);
  if (issues.some((i) => i.code === 'INVALID_SHAPE')) return issues;
  const record = data as Record<string, unknown>;
  if (typeof record.id === 'string' && typeof record.run === 'string' && RUN_ID_PATTERN.test(record.run)) {
    const parsed = parseOperatorMessageId(record.id);
    if (parsed && parsed.run !== record.run) {
      issues.push({ code: 'INVALID_ID_FORMAT', field: 'id', message: `id must be om-${record.run}-<n> (the record's own run)` });
    }
  }
  const kind = record.kind;
  if (typeof kind === 'string' && (OPERATOR_MESSAGE_KINDS as readonly string[]).includes(kind)) {
    const own = kind as OperatorMessageKind;
    for (const field of REQUIRED_KIND_FIELDS[own]) {
      if (!present(record, field)) issues.push({ code: 'MISSING_REQUIRED_FIELD', field, message: `a ${own} message requires ${field}` });
    }
    const other = OPERATOR_MESSAGE_KINDS.find((k) => k !== own)!;
    for (const field of KIND_FIELDS[other]) {
      if (present(record, field)) issues.push({ code: 'KIND_FIELD_MISMATCH', field, message: `${field} belongs to ${other} messages, not ${own}` });
    }
  }
  return issues;
}
