import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { formatIssue, RUN_ID_PATTERN, validateRuntimeHistoryRecord, type RuntimeHistoryRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { runGit, runtimeGitEnv } from './git.js';
import { historyCommitsDir, historyRecordFile } from './runtime-history.js';

/** Reading one provenance record: the record, or missing, or why it is unreadable (file named). */
export type HistoryRecordRead = { ok: true; record: RuntimeHistoryRecord } | { ok: false; missing: boolean; message: string };

/** Reads and validates `history/commits/<run-id>.json`. Never throws. */
export async function readHistoryRecord(paths: GardenPaths, runId: string): Promise<HistoryRecordRead> {
  const file = historyRecordFile(paths, runId);
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, missing: code === 'ENOENT' || code === 'ENOTDIR', message: `${file}: ${(error as Error).message}` };
  }
  return parseRecord(file, text, runId);
}

/** The same, synchronously (the snapshot loader's cache fill). */
export function readHistoryRecordSync(paths: GardenPaths, runId: string): HistoryRecordRead {
  const file = historyRecordFile(paths, runId);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, missing: code === 'ENOENT' || code === 'ENOTDIR', message: `${file}: ${(error as Error).message}` };
  }
  return parseRecord(file, text, runId);
}

function parseRecord(file: string, text: string, runId: string): HistoryRecordRead {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, missing: false, message: `${file}: malformed JSON (${(error as Error).message})` };
  }
  const issues = validateRuntimeHistoryRecord(value);
  if (issues.length > 0) return { ok: false, missing: false, message: `${file}: ${formatIssue(issues[0]!)}` };
  const record = value as RuntimeHistoryRecord;
  if (record.run_id !== runId) return { ok: false, missing: false, message: `${file}: run_id ${JSON.stringify(record.run_id)} does not match the file name` };
  return { ok: true, record };
}

/** Every provenance record, oldest close first; unreadable ones are reported, never repaired. */
export async function listHistoryRecords(paths: GardenPaths): Promise<{ records: RuntimeHistoryRecord[]; problems: string[] }> {
  let names: string[];
  try {
    names = await fsp.readdir(historyCommitsDir(paths));
  } catch {
    return { records: [], problems: [] };
  }
  const records: RuntimeHistoryRecord[] = [];
  const problems: string[] = [];
  for (const name of names.sort()) {
    if (!name.endsWith('.json')) continue;
    const runId = name.slice(0, -'.json'.length);
    if (!RUN_ID_PATTERN.test(runId)) continue;
    const read = await readHistoryRecord(paths, runId);
    if (read.ok) records.push(read.record);
    else problems.push(read.message);
  }
  records.sort((a, b) => (a.completed_at < b.completed_at ? -1 : a.completed_at > b.completed_at ? 1 : a.run_id.localeCompare(b.run_id)));
  return { records, problems };
}

/** A runtime-history commit: its id and subject. */
export interface RuntimeCommit {
  commit: string;
  subject: string;
}

/**
 * The runtime commit that first added each run's provenance record, read
 * from the runtime repo with the same pinned git directory as the capture
 * (read-only `git log`). Empty when the runtime repo does not exist yet, has
 * no commit, or git is unavailable. With `runId`, only that run's record is
 * looked up.
 */
export async function runtimeCommits(paths: GardenPaths, runId?: string, env: NodeJS.ProcessEnv = process.env): Promise<Map<string, RuntimeCommit>> {
  const found = new Map<string, RuntimeCommit>();
  if (!paths.split) return found;
  const gitDir = `${paths.runtimeRoot}/.git`;
  const stat = await fsp.lstat(gitDir).catch(() => undefined);
  if (!stat || stat.isSymbolicLink() || !stat.isDirectory()) return found;
  const target = runId ? `history/commits/${runId}.json` : 'history/commits';
  const log = await runGit(['log', '--format=%x01%H%x09%s', '--name-only', '--diff-filter=A', '--', target], paths.runtimeRoot, runtimeGitEnv(env, paths.runtimeRoot));
  if (!log.ok) return found;
  let current: RuntimeCommit | undefined;
  for (const line of log.stdout.split('\n')) {
    if (line.startsWith('\x01')) {
      const [commit = '', ...subject] = line.slice(1).split('\t');
      current = { commit, subject: subject.join('\t') };
      continue;
    }
    const match = /^history\/commits\/(.+)\.json$/.exec(line.trim());
    // Newest first: the last commit seen for a record is the one that first added it.
    if (match && current) found.set(match[1]!, current);
  }
  return found;
}
