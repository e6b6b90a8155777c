import { z } from 'zod';
import { collectIssues, GOAL_ID_PATTERN, PLANT_NAME_PATTERN, RUN_ID_PATTERN, timestamp, type ValidationIssue, lazySchema, codedString } from './common.js';
import { ULID_PATTERN } from './event.js';

/** A runner's name (`pak2 runner --name`, default the host name): letters, digits, `.`, `_`, `-`; at most 64. */
export const RUNNER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Lease states: `active` while heartbeats renew it; `finished` after `runs_finish`; `expired` when its TTL passed without one. */
export const LEASE_STATES = ['active', 'finished', 'expired'] as const;
export type LeaseState = (typeof LEASE_STATES)[number];

/**
 * A remote run's lease (seed 004, "Run"; docs/runners/level2.md),
 * `<runtime-root>/leases/<run-id>.json` while active, then
 * `<runtime-root>/leases/ended/<run-id>.json`. Times are ISO 8601 UTC;
 * `ttl_seconds` in seconds; `progress` a percentage 0–100.
 */
export const LeaseSchema = lazySchema(() =>
  z.looseObject({
    id: codedString(ULID_PATTERN, 'INVALID_ID_FORMAT'),
    run: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT'),
    goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'),
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    /** `instance`: the runner process's id (`Pak2-Runner-Instance`, kept in its state directory); a lease without one accepts any process of that name. */
    runner: z.looseObject({ name: z.string().regex(RUNNER_NAME_PATTERN), host: z.string().min(1).max(255), instance: z.string().optional() }),
    state: z.enum(LEASE_STATES),
    ttl_seconds: z.number().int().min(1),
    claimed_at: timestamp(),
    renewed_at: timestamp(),
    expires_at: timestamp(),
    heartbeats: z.number().int().min(0),
    progress: z.number().min(0).max(100).optional(),
    status_line: z.string().max(200).optional(),
    ended_at: timestamp().optional(),
    /** Set by a cancel or `pak2 stop` of the goal: the next heartbeat tells the runner to stop its agent. */
    stop: z.looseObject({ requested_at: timestamp(), requeue: z.boolean() }).optional(),
  }),
);
export type LeaseRecord = z.infer<typeof LeaseSchema>;

/** Validates a lease record. Never throws. */
export function validateLease(data: unknown): ValidationIssue[] {
  return collectIssues(LeaseSchema, data);
}

/**
 * One comment on a goal (seed 004, "Comments"), a line of
 * `<runtime-root>/comments/<goal-id>.jsonl`. `author` is `operator`, a
 * person's name, or `agent:<run-id>` for an agent's own comment. A blocking
 * comment left unanswered holds the goal `blocked`; an answer names the
 * comment it answers in `answers`.
 */
export const CommentSchema = lazySchema(() =>
  z.looseObject({
    id: codedString(ULID_PATTERN, 'INVALID_ID_FORMAT'),
    goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'),
    run: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT').optional(),
    author: z.string().min(1).max(200),
    body: z.string().min(1),
    blocking: z.boolean(),
    answers: codedString(ULID_PATTERN, 'INVALID_ID_FORMAT').optional(),
    created_at: timestamp(),
  }),
);
export type CommentRecord = z.infer<typeof CommentSchema>;

/** Validates a comment. Never throws. */
export function validateComment(data: unknown): ValidationIssue[] {
  return collectIssues(CommentSchema, data);
}

/** Artifact kinds a runner attaches (seed 004, `artifacts_attach`): a diff, a link (a pull request), a file. */
export const ARTIFACT_KINDS = ['diff', 'link', 'file'] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/** An artifact's name: one path segment, no leading dot. */
export const ARTIFACT_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/**
 * One attached artifact, a line of `<runtime-root>/runs/<run-id>/artifacts.jsonl`;
 * the content of a `diff` or `file` is `runs/<run-id>/artifacts/<name>`
 * (`bytes` long, `sha256` of it); a `link` has `url`.
 */
export const ArtifactSchema = lazySchema(() =>
  z.looseObject({
    name: z.string().regex(ARTIFACT_NAME_PATTERN),
    kind: z.enum(ARTIFACT_KINDS),
    run: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT'),
    url: z.string().url().optional(),
    bytes: z.number().int().min(0).optional(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    attached_at: timestamp(),
    by: z.string().min(1),
  }),
);
export type ArtifactRecord = z.infer<typeof ArtifactSchema>;

/** Validates an artifact record. Never throws. */
export function validateArtifact(data: unknown): ValidationIssue[] {
  return collectIssues(ArtifactSchema, data);
}
