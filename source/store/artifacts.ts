import fsp from 'node:fs/promises';
import path from 'node:path';
import { ArtifactSchema, collectIssues, type ArtifactRecord } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { appendJsonLine, readJsonLines } from './files.js';
import { storeOf } from './backend.js';

/**
 * `<runtime-root>/runs/<run-id>/artifacts.jsonl`: the artifacts a runner
 * attached to a remote run, one line each (seed 004, `artifacts_attach`;
 * docs/runners/level2.md). The content of a `diff` or `file` artifact is
 * `runs/<run-id>/artifacts/<name>`.
 */
export function artifactsFile(paths: GardenPaths, runId: string): string {
  return path.join(runDir(paths, runId), 'artifacts.jsonl');
}

/**
 * A run's attached artifacts in the order attached; a run without any (a
 * local run) has none. Torn or foreign lines are skipped, never repaired.
 * Never throws for a missing file.
 */
export async function readArtifacts(paths: GardenPaths, runId: string): Promise<ArtifactRecord[]> {
  const valid = (value: unknown) => collectIssues(ArtifactSchema, value).length === 0;
  const store = storeOf(paths);
  if (store) return (await store.documentLines('artifact', runId)).map((line) => line.record).filter(valid) as ArtifactRecord[];
  return readJsonLines<ArtifactRecord>(artifactsFile(paths, runId), valid);
}

/**
 * True when run `runId` has an artifact named `name` attached: a line of
 * its artifacts.jsonl naming it (torn or not), or a stored one. The caller
 * holds the run's lease lock, so the answer stands until it appends.
 */
export async function hasArtifact(paths: GardenPaths, runId: string, name: string): Promise<boolean> {
  const store = storeOf(paths);
  if (store) return (await store.documentLines('artifact', runId)).some((line) => (line.record as { name?: unknown } | null)?.name === name);
  return fsp.readFile(artifactsFile(paths, runId), 'utf8').then((t) => t.split('\n').some((l) => l.includes(`"name":${JSON.stringify(name)}`)), () => false);
}

/** Appends an artifact's record (validated by the caller) to the run's artifacts.jsonl, or to the store. */
export async function appendArtifact(paths: GardenPaths, record: ArtifactRecord): Promise<void> {
  const store = storeOf(paths);
  if (store) await store.appendDocumentLine('artifact', record.run, record);
  else await appendJsonLine(artifactsFile(paths, record.run), record);
}
