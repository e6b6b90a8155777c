import { z } from 'zod';

// Each pak2 process validates a handful of records: compiling a validator per schema (zod's JIT, `new Function`) costs more than it saves.
z.config({ jitless: true });

/**
 * Schema-level reason codes of the run seed (000, "Failure modes"), reused by
 * every record validator. Goal, event, plant and config validators add the few
 * codes of their own documented in `docs/<record>/level2.md`.
 */
export const REASON_CODES = [
  'MISSING_REQUIRED_FIELD',
  'INVALID_ID_FORMAT',
  'INVALID_GOAL_FORMAT',
  'INVALID_PLANT_NAME',
  'INVALID_STATUS',
  'INVALID_TIMESTAMP',
  'MISSING_COMPLETED_AT',
  'MISSING_COST',
  'INVALID_COST_SOURCE',
  'INVALID_COST_FIELD',
  'MISSING_FAILURE_REASON',
  'INVALID_FAILURE_REASON',
  'MISSING_REFLECTION',
  'INVALID_SHAPE',
  // goal (docs/goal/level2.md)
  'INVALID_GOAL_TYPE',
  'INVALID_PRIORITY',
  'MISSING_CLOSED_REASON',
  'INVALID_CLOSED_REASON',
  'INVALID_DEPENDENCY',
  'INVALID_BUDGET',
  // event (docs/events/level2.md)
  'INVALID_EVENT_TYPE',
  'INVALID_EVENT_ID',
  // config (docs/garden/level2.md)
  'INVALID_CONFIG_VALUE',
  'UNKNOWN_CONFIG_KEY',
  // any field whose value has the wrong JSON type
  'INVALID_FIELD_TYPE',
  // operator message (docs/operator-message/level2.md)
  'INVALID_MESSAGE_KIND',
  'MESSAGE_TOO_LARGE',
  'INVALID_TITLE',
  'KIND_FIELD_MISMATCH',
  // active threads (docs/active-threads/level2.md)
  'DUPLICATE_THREAD_ID',
  'VALUE_TOO_LARGE',
  // landing (docs/landing/level2.md)
  'INVALID_LANDING_STATE',
  'INVALID_LANDING_REASON',
  'INVALID_COMMIT',
] as const;

/**
 * A schema built on first use. pak2's CLI starts in ~2.5× node's own start;
 * building every record's zod schema at import costs a good part of that, and
 * most commands use two or three of them. The proxy forwards every operation
 * to the schema once built (methods bound to it), so callers see a zod schema.
 */
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  const real = (): T => (built ??= build());
  return new Proxy({} as T, {
    get(_target, key) {
      const target = real();
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    has: (_target, key) => Reflect.has(real(), key),
    set: (_target, key, value) => Reflect.set(real(), key, value),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor(_target, key) {
      const descriptor = Reflect.getOwnPropertyDescriptor(real(), key);
      if (descriptor) descriptor.configurable = true;
      return descriptor;
    },
  });
}

/** One reason code of {@link REASON_CODES}. */
export type ReasonCode = (typeof REASON_CODES)[number];

/**
 * One validation finding: the reason code, the dotted field path it concerns
 * (`""` for the document itself) and a sentence for a person.
 */
export interface ValidationIssue {
  code: ReasonCode;
  field: string;
  message: string;
}

/** Goal id: `N-slug` (seed 000, "Run ID format"); N starts at 1. */
export const GOAL_ID_PATTERN = /^[1-9][0-9]*-[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** Run id: `N-slug-rN`, the goal id plus the attempt number (seed 000). */
export const RUN_ID_PATTERN = /^([1-9][0-9]*-[a-z0-9]+(?:-[a-z0-9]+)*)-r([1-9][0-9]*)$/;
/**
 * Plant name: lower-case letters, digits and inner hyphens, 1–64 characters,
 * starting with a letter. Rules out `..`, `/`, `\`, dots and spaces, so a
 * plant name is always one safe path segment.
 */
export const PLANT_NAME_PATTERN = /^[a-z](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
/**
 * ISO 8601 UTC timestamp, optional fractional seconds, with UTC written as
 * `Z` or `+00:00` (both read as UTC). Any other offset is not UTC.
 */
export const ISO_UTC_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|\+00:00)$/;

/** True when `value` is an ISO 8601 UTC timestamp (`Z` or `+00:00`) naming a real instant. */
export function isIsoUtc(value: unknown): value is string {
  if (typeof value !== 'string' || !ISO_UTC_PATTERN.test(value)) return false;
  const parsed = new Date(value);
  if (Number.isNaN(parsed.getTime())) return false;
  // Date rolls 2024-02-30 over to March: require the fields to survive the round trip.
  const [date, time] = value.split('T') as [string, string];
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const [hh, mm, ss] = time.slice(0, 8).split(':').map(Number) as [number, number, number];
  return (
    parsed.getUTCFullYear() === y &&
    parsed.getUTCMonth() + 1 === m &&
    parsed.getUTCDate() === d &&
    parsed.getUTCHours() === hh &&
    parsed.getUTCMinutes() === mm &&
    parsed.getUTCSeconds() === ss
  );
}

/** A zod string carrying a reason code as its error message. */
export function codedString(pattern: RegExp, code: ReasonCode): z.ZodString {
  return z.string({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE') }).regex(pattern, { error: code });
}

/** A zod ISO-UTC timestamp carrying INVALID_TIMESTAMP. */
export function timestamp(): z.ZodType<string> {
  return z
    .string({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_TIMESTAMP') })
    .regex(ISO_UTC_PATTERN, { error: 'INVALID_TIMESTAMP' })
    .refine(isIsoUtc, { error: 'INVALID_TIMESTAMP' });
}

/** A zod enum whose failures carry `code` (or MISSING_REQUIRED_FIELD when absent). */
export function codedEnum<const T extends readonly [string, ...string[]]>(values: T, code: ReasonCode) {
  return z.enum(values, { error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : code) });
}

/** A required non-empty string field. */
export function requiredString(): z.ZodString {
  return z
    .string({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE') })
    .min(1, { error: 'MISSING_REQUIRED_FIELD' });
}

function isReasonCode(value: string): value is ReasonCode {
  return (REASON_CODES as readonly string[]).includes(value);
}

/**
 * Runs a zod schema and turns its issues into {@link ValidationIssue}s. Never
 * throws: anything that is not a plain object is one INVALID_SHAPE issue.
 */
export function collectIssues(schema: z.ZodType, data: unknown): ValidationIssue[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return [{ code: 'INVALID_SHAPE', field: '', message: 'document is not a JSON object' }];
  }
  const result = schema.safeParse(data, { reportInput: true });
  if (result.success) return [];
  const issues: ValidationIssue[] = [];
  for (const issue of result.error.issues) {
    const field = issue.path.map(String).join('.');
    const code: ReasonCode = isReasonCode(issue.message)
      ? issue.message
      : issue.code === 'invalid_type' && issue.input === undefined
        ? 'MISSING_REQUIRED_FIELD'
        : issue.code === 'unrecognized_keys'
          ? 'UNKNOWN_CONFIG_KEY'
          : 'INVALID_FIELD_TYPE';
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) issues.push({ code, field: [field, key].filter(Boolean).join('.'), message: `${describe(code)}: ${key}` });
      continue;
    }
    issues.push({ code, field, message: describe(code) });
  }
  return dedupe(issues);
}

function dedupe(issues: ValidationIssue[]): ValidationIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.code}:${i.field}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const MESSAGES: Record<ReasonCode, string> = {
  MISSING_REQUIRED_FIELD: 'required field is absent',
  INVALID_ID_FORMAT: 'id does not match the expected pattern',
  INVALID_GOAL_FORMAT: 'goal does not match N-slug',
  INVALID_PLANT_NAME: 'plant name must match ^[a-z](?:[a-z0-9-]{0,62}[a-z0-9])?$',
  INVALID_STATUS: 'status is not a valid status word',
  INVALID_TIMESTAMP: 'not an ISO 8601 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.fff]Z or +00:00)',
  MISSING_COMPLETED_AT: 'terminal run is missing completed_at',
  MISSING_COST: 'terminal run is missing cost',
  INVALID_COST_SOURCE: 'cost.source must be provider, estimated or unknown',
  INVALID_COST_FIELD: 'cost field must be a non-negative number',
  MISSING_FAILURE_REASON: 'failed run is missing failure_reason',
  INVALID_FAILURE_REASON: 'failure_reason is not a valid reason code',
  MISSING_REFLECTION: 'successful run of a reflection-required goal type is missing reflection',
  INVALID_SHAPE: 'document is not a JSON object',
  INVALID_GOAL_TYPE: 'type is not a goal type',
  INVALID_PRIORITY: 'priority must be an integer from 0 to 100',
  MISSING_CLOSED_REASON: 'closed goal is missing closed_reason',
  INVALID_CLOSED_REASON: 'closed_reason must be success, failure or cancelled',
  INVALID_DEPENDENCY: 'depends_on entries must be N-slug goal ids, each once, never the goal itself',
  INVALID_BUDGET: 'budget_usd must be an amount in USD greater than 0, at most 1000000',
  INVALID_EVENT_TYPE: 'type is not a known event type',
  INVALID_EVENT_ID: 'id is not a ULID (26 Crockford base-32 characters)',
  INVALID_CONFIG_VALUE: 'value is out of range or of the wrong type',
  UNKNOWN_CONFIG_KEY: 'unknown key',
  INVALID_FIELD_TYPE: 'value has the wrong type',
  INVALID_MESSAGE_KIND: 'kind must be tend_survey or recently_concluded',
  MESSAGE_TOO_LARGE: 'value is larger than the operator-message bound',
  INVALID_TITLE: 'title must be one line of text',
  KIND_FIELD_MISMATCH: 'field belongs to the other operator-message kind',
  DUPLICATE_THREAD_ID: 'thread id appears more than once',
  VALUE_TOO_LARGE: 'value is larger than its documented bound',
  INVALID_LANDING_STATE: 'state is not a landing state',
  INVALID_LANDING_REASON: 'failure_reason is not a landing reason code',
  INVALID_COMMIT: 'not a full git commit id (40 or 64 lower-case hex digits)',
};

function describe(code: ReasonCode): string {
  return MESSAGES[code];
}

/** Formats one issue as `field: CODE (message)`, for one-line errors. */
export function formatIssue(issue: ValidationIssue): string {
  return `${issue.field || '(document)'}: ${issue.code} (${issue.message})`;
}

/** Builds an issue by hand for the cross-field rules zod refinements add. */
export function issue(code: ReasonCode, field: string): ValidationIssue {
  return { code, field, message: MESSAGES[code] };
}
