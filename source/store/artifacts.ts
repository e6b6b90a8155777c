import fsp from 'node:fs/promises';
import path from 'node:path';
import { ArtifactSchema, collectIssues, type ArtifactRecord } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { appendJsonLine, readJsonLines } from './files.js';
import { storeOf } from './backend.js';
import type { StoredContent } from './documents.js';

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

/** `<runtime-root>/runs/<run-id>/artifacts/<name>`: a `diff` or `file` artifact's content. */
export function artifactContentFile(paths: GardenPaths, runId: string, name: string): string {
  return path.join(runDir(paths, runId), 'artifacts', name);
}

/**
 * Keeps a `diff` or `file` artifact's content: the file
 * {@link artifactContentFile} (never overwritten: EEXIST), or the store's.
 * One name once per run is the caller's ({@link hasArtifact} under the
 * run's lease lock).
 *
 * @throws the file system's EEXIST when the file is there already; StoreError IO_ERROR.
 */
export async function writeArtifactContent(paths: GardenPaths, runId: string, name: string, bytes: Buffer): Promise<void> {
  const store = storeOf(paths);
  if (store) {
    await store.putDocument('artifact-content', `${runId}/${name}`, { encoding: 'base64', content: bytes.toString('base64') } satisfies StoredContent);
    return;
  }
  const file = artifactContentFile(paths, runId, name);
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, bytes, { flag: 'wx' });
}

/**
 * A local file holding an artifact's content, for a tool that reads a path
 * (git apply): {@link artifactContentFile} itself; on a store, that file
 * written from the stored content (this server may not be the one the
 * runner uploaded to). Undefined when there is no such content.
 */
export async function localArtifactContent(paths: GardenPaths, runId: string, name: string): Promise<string | undefined> {
  const file = artifactContentFile(paths, runId, name);
  const store = storeOf(paths);
  if (store) {
    const stored = (await store.documentRecord('artifact-content', `${runId}/${name}`)) as Partial<StoredContent> | undefined;
    if (stored?.encoding !== 'base64' || typeof stored.content !== 'string') return undefined;
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, Buffer.from(stored.content, 'base64'));
    return file;
  }
  return fsp.stat(file).then(
    () => file,
    () => undefined,
  );
}

/** Appends an artifact's record (validated by the caller) to the run's artifacts.jsonl, or to the store. */
export async function appendArtifact(paths: GardenPaths, record: ArtifactRecord): Promise<void> {
  const store = storeOf(paths);
  if (store) await store.appendDocumentLine('artifact', record.run, record);
  else await appendJsonLine(artifactsFile(paths, record.run), record);
}
