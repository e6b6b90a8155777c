import type { Command } from 'commander';
import { RUN_ID_PATTERN, type RuntimeHistoryRecord } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { historyRecordFile, listHistoryRecords, readHistoryRecord, runtimeCommits, type RuntimeCommit } from '../../history/index.js';
import { readRun, StoreError } from '../../store/index.js';
import { age, sanitize, table, truncateColumns } from '../../format.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/** A provenance record with the runtime commit that recorded it (null when the capture did not commit). */
export type HistoryEntry = RuntimeHistoryRecord & { runtime_commit: string | null; runtime_subject: string | null };

function entry(record: RuntimeHistoryRecord, commit: RuntimeCommit | undefined): HistoryEntry {
  return { ...record, runtime_commit: commit?.commit ?? null, runtime_subject: commit?.subject ?? null };
}

const LEGACY = 'runtime history is off: this garden uses the legacy unified layout ([runtime].root is not set in PAK2.toml)';

/** `pak2 history [RUN] [--json]`: the runtime provenance of one closed run, or of every one. */
export function registerHistory(program: Command, io: CliIO): void {
  program
    .command('history')
    .description('runtime provenance of closed runs: authored HEAD, authored tree clean/dirty, runtime commit')
    .argument('[run]', 'one run id (N-slug-rN); without it, every recorded run')
    .option('--json', 'print the record(s) as JSON')
    .action(async (runId: string | undefined, opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const { paths } = garden;
      if (runId !== undefined && !RUN_ID_PATTERN.test(runId)) throw new UserError(`RUN ${runId}: not a run id (N-slug-rN)`);

      if (runId === undefined) {
        if (!paths.split) {
          if (opts.json) return printJson(io, []);
          return io.out(LEGACY);
        }
        const { records, problems } = await listHistoryRecords(paths);
        for (const problem of problems) io.err(`pak2: skipped ${problem}`);
        const commits = records.length ? await runtimeCommits(paths, undefined, io.env) : new Map<string, RuntimeCommit>();
        const entries = records.map((r) => entry(r, commits.get(r.run_id)));
        if (opts.json) return printJson(io, entries);
        if (entries.length === 0) return io.out('no runtime history yet: a record is written when a run closes in a git garden');
        return io.out(
          table(
            ['RUN', 'STATUS', 'AUTHORED HEAD', 'TREE', 'RUNTIME COMMIT', 'CLOSED'],
            entries.map((e) => [truncateColumns(e.run_id, 44), e.status, e.authored_head.slice(0, 12), e.authored_tree, e.runtime_commit?.slice(0, 12) ?? '-', `${age(e.completed_at)} ago`]),
          ),
        );
      }

      if (!paths.split) throw new UserError(`no runtime history for ${runId}: ${LEGACY}`, { exitCode: 1 });
      const read = await readHistoryRecord(paths, runId);
      if (!read.ok) {
        if (!read.missing) throw new StoreError('INVALID_RECORD', read.message, historyRecordFile(paths, runId));
        const run = await readRun(paths, runId); // RUN_NOT_FOUND when there is no such run
        const why = run.status === 'running' ? 'it is still running' : 'its close wrote no record (the reason was logged to the coordinator’s stderr at close)';
        throw new UserError(`run ${runId} has no runtime provenance record: ${why}`, { exitCode: 1, hint: `the record would be ${historyRecordFile(paths, runId)}` });
      }
      const commits = await runtimeCommits(paths, runId, io.env);
      const e = entry(read.record, commits.get(runId));
      if (opts.json) return printJson(io, e);
      io.out(
        sanitize(
          [
            `run ${e.run_id}  ${e.status}, closed ${e.completed_at}`,
            `  goal ${e.goal}  plant ${e.plant}`,
            `  authored head ${e.authored_head}  authored tree ${e.authored_tree}`,
            `  record ${e.runtime_root}/history/commits/${e.run_id}.json`,
            e.runtime_commit ? `  runtime commit ${e.runtime_commit}  ${e.runtime_subject ?? ''}`.trimEnd() : '  runtime commit none: the capture wrote the record but did not commit',
          ].join('\n'),
        ),
      );
    });
}
