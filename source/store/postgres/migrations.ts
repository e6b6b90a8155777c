/**
 * The PostgreSQL store's schema, in versions (docs/store/level2.md,
 * "Schema"): pak2 applies the missing ones at start, each in its own
 * transaction under an advisory lock (two processes starting at once apply
 * each version once), records each in `pak2_schema`, and refuses a
 * database whose version is newer than this code knows.
 *
 * Records are kept whole in `json` columns (key order and all, so an export
 * writes them back byte for byte); the columns beside them are what queries
 * select and order on.
 */
import { StoreError } from '../files.js';
import { asStoreError, type Db } from './db.js';

/** One schema version: its number and the SQL that makes it from the one before. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Every version, oldest first. A released version is never edited: a change is a new version. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'goals, runs, events, leases, comments, documents, duties',
    sql: `
CREATE TABLE goal_counter (one boolean PRIMARY KEY DEFAULT true CHECK (one), n bigint NOT NULL);
INSERT INTO goal_counter (one, n) VALUES (true, 0);

CREATE TABLE goals (
  id text PRIMARY KEY,
  n bigint NOT NULL UNIQUE,
  status text NOT NULL,
  priority integer NOT NULL,
  submitted_at text NOT NULL,
  plant text,
  record json NOT NULL
);
CREATE INDEX goals_open ON goals (priority DESC, submitted_at, n) WHERE status <> 'closed';
CREATE INDEX goals_closed ON goals ((record->>'closed_at') DESC, n DESC) WHERE status = 'closed';

CREATE TABLE runs (
  id text PRIMARY KEY,
  goal text NOT NULL,
  attempt integer NOT NULL,
  status text NOT NULL,
  started_at text NOT NULL,
  record json NOT NULL,
  UNIQUE (goal, attempt)
);
CREATE INDEX runs_open ON runs (status) WHERE status = 'running';

-- A terminal run record is never rewritten (seed 000): the database refuses it, whoever asks.
CREATE FUNCTION pak2_runs_sealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status <> 'running' THEN
    RAISE EXCEPTION 'run % is already %; a terminal run record is never rewritten', OLD.id, OLD.status USING ERRCODE = 'P0001';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER runs_sealed BEFORE UPDATE OR DELETE ON runs FOR EACH ROW EXECUTE FUNCTION pak2_runs_sealed();

CREATE TABLE events (
  seq bigint PRIMARY KEY,
  -- ULIDs compare byte by byte whatever the database's locale.
  id text COLLATE "C" NOT NULL UNIQUE,
  type text NOT NULL,
  goal text,
  run text,
  record json NOT NULL
);
CREATE INDEX events_goal ON events (goal, seq) WHERE goal IS NOT NULL;
CREATE INDEX events_run ON events (run, seq) WHERE run IS NOT NULL;

-- Events are immutable (seed 004): never updated, never deleted.
CREATE FUNCTION pak2_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'events are immutable: never updated, never deleted' USING ERRCODE = 'P0001';
END $$;
CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION pak2_events_immutable();

CREATE SEQUENCE lease_epoch;
CREATE TABLE leases (
  run text PRIMARY KEY,
  goal text NOT NULL,
  state text NOT NULL,
  epoch bigint NOT NULL,
  expires_at text NOT NULL,
  record json NOT NULL
);
CREATE INDEX leases_active ON leases (expires_at) WHERE state = 'active';

CREATE TABLE comments (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  goal text NOT NULL,
  record json NOT NULL
);
CREATE INDEX comments_goal ON comments (goal, seq);

-- A run's agent stream (its events.jsonl), line by line, so every server can tail it.
CREATE TABLE run_stream (
  run text NOT NULL,
  line_no integer NOT NULL,
  line text NOT NULL,
  PRIMARY KEY (run, line_no)
);

-- Records of other kinds (inbox notes, conversations, landings, budget, schedules, ...), one row each.
CREATE TABLE documents (
  kind text NOT NULL,
  key text NOT NULL,
  record json NOT NULL,
  PRIMARY KEY (kind, key)
);

-- Duties done once per garden (lease expiry, tends, schedules, webhooks, landing): who holds each, until when.
CREATE TABLE duties (
  duty text PRIMARY KEY,
  holder text NOT NULL,
  term bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
`,
  },
  {
    version: 2,
    name: 'document lines',
    sql: `
-- The lines of an append-only record file (conversation messages, supplements, artifacts, operator messages,
-- webhook deliveries): line n of (kind, parent), 1 first, in the order appended.
CREATE TABLE document_lines (
  kind text NOT NULL,
  parent text NOT NULL,
  n bigint NOT NULL,
  record json NOT NULL,
  PRIMARY KEY (kind, parent, n)
);
`,
  },
  {
    version: 3,
    name: 'run streams as byte chunks',
    sql: `
-- A run's agent streams (events.jsonl, stderr.log) as the bytes appended, so every server can tail them:
-- one row per stream with the size held (an append moves it only from the offset it names), one per chunk appended.
-- No foreign key to runs: an append never takes a lock on the run's row (the lease lock), the code checks the run exists.
DROP TABLE run_stream;
CREATE TABLE run_streams (
  run text NOT NULL,
  stream text NOT NULL CHECK (stream IN ('events', 'stderr')),
  size bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (run, stream)
);
CREATE TABLE run_stream_chunks (
  run text NOT NULL,
  stream text NOT NULL,
  byte_offset bigint NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (run, stream, byte_offset),
  FOREIGN KEY (run, stream) REFERENCES run_streams (run, stream)
);
`,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** The advisory lock (session-scoped) migrations hold, so two starting processes apply each version once. */
const MIGRATION_LOCK = 0x70616b33;

/**
 * Brings the database to {@link SCHEMA_VERSION}: applies each missing
 * version in its own transaction and records it; does nothing when the
 * database is current.
 *
 * @returns the versions applied (empty when current).
 * @throws StoreError SCHEMA_TOO_NEW when the database's version is newer than this code's; IO_ERROR otherwise.
 */
export async function migrate(db: Db, by = 'pak2'): Promise<number[]> {
  const client = await db.pool.connect().catch((error: unknown) => {
    throw asStoreError(db, error);
  });
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS pak2_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL)');
      const { rows } = await client.query<{ version: number }>('SELECT coalesce(max(version), 0)::int AS version FROM pak2_schema');
      const have = rows[0]!.version;
      if (have > SCHEMA_VERSION) {
        throw new StoreError('SCHEMA_TOO_NEW', `store ${db.where}: its schema is version ${have}, newer than this pak2 knows (${SCHEMA_VERSION}); upgrade pak2 before opening it`);
      }
      for (const migration of MIGRATIONS.filter((m) => m.version > have)) {
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO pak2_schema (version, name, applied_by) VALUES ($1, $2, $3)', [migration.version, migration.name, by]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new StoreError('IO_ERROR', `store ${db.where}: schema version ${migration.version} (${migration.name}) failed: ${(error as Error).message}`, undefined, error);
        }
        applied.push(migration.version);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } catch (error) {
    throw asStoreError(db, error);
  } finally {
    client.release();
  }
  return applied;
}

/** The database's schema version (0: pak2 never set it up). */
export async function schemaVersion(db: Db): Promise<number> {
  try {
    // Two statements: one naming pak2_schema fails to plan where the table does not exist, whatever a CASE around it says.
    const { rows: table } = await db.pool.query<{ present: boolean }>("SELECT to_regclass('pak2_schema') IS NOT NULL AS present");
    if (!table[0]!.present) return 0;
    const { rows } = await db.pool.query<{ version: number }>('SELECT coalesce(max(version), 0)::int AS version FROM pak2_schema');
    return rows[0]!.version;
  } catch (error) {
    throw asStoreError(db, error);
  }
}
