import path from 'node:path';
import { ArtifactSchema, collectIssues, type ArtifactRecord } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { readJsonLines } from './files.js';

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
  return readJsonLines<ArtifactRecord>(artifactsFile(paths, runId), (value) => collectIssues(ArtifactSchema, value).length === 0);
}
