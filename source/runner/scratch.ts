import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GoalRecord, PlantRecord, RunRecord } from '../contracts/index.js';
import { gardenPaths, loadGarden, parseConfig, type Garden, type GardenConfig, type GardenPaths } from '../garden/index.js';
import { adoptRun, PLANT_DIRS, plantDir, seedFile, writeGoalRecord, writeJsonAtomic } from '../store/index.js';
import type { ClaimContext, PlantDocument, RunSettings } from './client.js';
import { scratchRoot } from './state.js';

/**
 * The runner's local scratch garden (docs/runners/level2.md): pak2's own
 * driver code runs a claimed goal against it exactly as the coordinator
 * would against a garden. Its garden root is the workdir (a checkout of the
 * garden's repository: the agent works there, and its `PAK2.toml` gives the
 * `[drivers]` and `[defaults]`); its runtime root, plants, seeds and
 * MOTIVATION.md are inside the state directory, so writing the garden's
 * records never touches the checkout.
 */

/** The scratch garden's paths: garden root `workdir`, everything else under `<state>/garden/`. Not split (no runtime history is captured here). */
export function scratchPaths(workdir: string, stateDir: string): GardenPaths {
  const root = scratchRoot(stateDir);
  const base = gardenPaths(workdir, root);
  return {
    ...base,
    split: false,
    homeDir: root,
    plantsDir: path.join(root, 'plants'),
    seedsDir: path.join(root, 'seeds'),
    motivationFile: path.join(root, 'MOTIVATION.md'),
  };
}

/**
 * The workdir's configuration: its `PAK2.toml` read by the garden loader
 * when there is one, else every default.
 *
 * @throws UserError for a PAK2.toml that does not parse or validate.
 */
export function workdirConfig(workdir: string): GardenConfig {
  if (fs.existsSync(path.join(workdir, 'PAK2.toml'))) {
    try {
      return loadGarden(workdir).config;
    } catch (error) {
      // The legacy-layout refusal is about the workdir's own runtime, not the runner's: read the file alone.
      if (!/legacy layout/.test((error as Error).message)) throw error;
      return parseConfig(fs.readFileSync(path.join(workdir, 'PAK2.toml'), 'utf8'), path.join(workdir, 'PAK2.toml'));
    }
  }
  return parseConfig('');
}

/** A plant's directory in the workdir (the checkout): `plants/<plant>`, or under `[garden].home` (`.pak2/plants/<plant>`) in an adopted repository. */
export function workdirPlantDir(workdir: string, config: GardenConfig, plant: string): string {
  return path.join(gardenPaths(workdir, undefined, config.home).plantsDir, plant);
}

/** `config` with the garden's `[coordinator]` limits applied (seconds). */
export function withSettings(config: GardenConfig, settings: Partial<RunSettings> | undefined): GardenConfig {
  const c = config.coordinator;
  return {
    ...config,
    coordinator: {
      ...c,
      runTimeoutSeconds: settings?.run_timeout_seconds ?? c.runTimeoutSeconds,
      watchdogSeconds: settings?.watchdog_seconds ?? c.watchdogSeconds,
      toolSilenceSeconds: settings?.tool_silence_seconds ?? c.toolSilenceSeconds,
      resultGraceSeconds: settings?.result_grace_seconds ?? c.resultGraceSeconds,
      resultGraceCapSeconds: settings?.result_grace_cap_seconds ?? c.resultGraceCapSeconds,
    },
  };
}

/** The scratch garden for a run under `settings` (the garden's limits). */
export function scratchGarden(workdir: string, stateDir: string, settings?: Partial<RunSettings>, config: GardenConfig = workdirConfig(workdir)): Garden {
  return { paths: scratchPaths(workdir, stateDir), config: withSettings(config, settings) };
}

/** The plant record of a claim's context (a bare name becomes an active plant whose seed is its name). */
export function plantOf(context: ClaimContext, fallbackName: string, now: Date = new Date()): PlantRecord {
  const given = context.plant;
  if (typeof given === 'string' || !given) {
    const name = typeof given === 'string' ? given : fallbackName;
    return { name, seed: name, status: 'active', commissioned_at: now.toISOString() };
  }
  return { status: 'active', commissioned_at: now.toISOString(), ...given } as PlantRecord;
}

/** True for a document path a plant directory may hold: relative, no `..`, under memory/, skills/ or knowledge/. */
export function isDocumentPath(p: string): boolean {
  if (!p || path.isAbsolute(p) || p.includes('\\')) return false;
  const parts = p.split('/');
  return parts.length >= 2 && (PLANT_DIRS as readonly string[]).includes(parts[0]!) && parts.every((s) => s !== '' && s !== '.' && s !== '..');
}

/**
 * Writes a claim into the scratch garden: MOTIVATION.md, the seed, the
 * plant (record and documents; the plant's previous scratch documents are
 * removed first), the goal record and the run record (the garden's, sealed
 * through the store). Documents with a path outside the plant's
 * directories are skipped.
 *
 * @returns the plant record written.
 * @throws StoreError for a run record that does not validate.
 */
export async function writeClaim(paths: GardenPaths, claim: { goal: GoalRecord; run: RunRecord; context: ClaimContext }): Promise<PlantRecord> {
  const { goal, run, context } = claim;
  const plant = plantOf(context, run.plant);
  await fsp.mkdir(path.dirname(paths.motivationFile), { recursive: true });
  // No MOTIVATION.md in the garden: none here either, so the prompt says so as the garden's would.
  if (typeof context.motivation === 'string') await fsp.writeFile(paths.motivationFile, context.motivation);
  else await fsp.rm(paths.motivationFile, { force: true });
  const seed = typeof context.seed === 'string' ? { name: plant.seed, content: context.seed } : context.seed;
  if (seed && typeof seed.content === 'string') {
    const file = seedFile(paths, seed.name || plant.seed);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, seed.content);
  }
  const dir = plantDir(paths, plant.name);
  for (const sub of PLANT_DIRS) await fsp.rm(path.join(dir, sub), { recursive: true, force: true });
  for (const sub of PLANT_DIRS) await fsp.mkdir(path.join(dir, sub), { recursive: true });
  await writePlantDocuments(dir, context.documents ?? []);
  await writeJsonAtomic(path.join(dir, 'meta.json'), plant);
  await writeGoalRecord(paths, goal);
  // The garden's worktree is where the runner's diff.patch lands later; the runner works in its own checkout.
  const { worktree: _gardenWorktree, ...local } = run;
  await adoptRun(paths, { ...local, status: 'running' });
  return plant;
}

/** Writes documents under a plant directory, skipping any whose path is not a plant document's. */
export async function writePlantDocuments(dir: string, documents: readonly PlantDocument[]): Promise<void> {
  for (const doc of documents) {
    if (!isDocumentPath(doc.path) || typeof doc.content !== 'string') continue;
    const file = path.join(dir, ...doc.path.split('/'));
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, doc.content);
  }
}
