import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { PLANT_NAME_PATTERN, validateEvent, validatePlant, type EventRecord, type PlantRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readJsonLines, readPlant, StoreError, writeJsonAtomic } from '../store/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/**
 * A plant's record as the event log tells it: the last PlantCommissioned
 * (name, seed from `detail: "seed <seed>"`, commissioned_at) and a later
 * PlantArchived (status, archived_at). Undefined when the log never saw it
 * commissioned. The description is not in the log.
 */
export async function plantFromEvents(paths: GardenPaths, name: string): Promise<PlantRecord | undefined> {
  const events = await readJsonLines<EventRecord>(paths.coordinatorLog, (v) => validateEvent(v).length === 0 && (v as EventRecord).plant === name);
  let record: PlantRecord | undefined;
  for (const event of events) {
    if (event.type === 'PlantCommissioned') {
      const seed = /^seed (\S+)$/.exec(event.detail ?? '')?.[1];
      if (seed) record = { name, seed, status: 'active', commissioned_at: event.ts };
    } else if (event.type === 'PlantArchived' && record) {
      record = { ...record, status: 'archived', archived_at: event.ts };
    }
  }
  return record && validatePlant(record).length === 0 ? record : undefined;
}

/**
 * Every plant `plants/<name>/meta.json` (readPlant): a plant directory with
 * no meta.json, one that does not read or validate, or whose `name` is not
 * its directory's. Fix, for a missing or damaged record of a plant the event
 * log saw commissioned: move the damaged file aside and rebuild the record
 * from the log ({@link plantFromEvents}). Otherwise no automatic fix (moving
 * the file aside would leave the plant with no record at all).
 */
export async function checkPlants(ctx: DoctorContext): Promise<Problem[]> {
  const { paths } = ctx.garden;
  let entries: fs.Dirent[];
  try {
    entries = await fsp.readdir(paths.plantsDir, { withFileTypes: true });
  } catch {
    return [];
  }
  const problems: Problem[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isDirectory() || !PLANT_NAME_PATTERN.test(entry.name)) continue;
    const name = entry.name;
    const file = path.join(paths.plantsDir, name, 'meta.json');
    let text: string;
    let field: string | undefined;
    try {
      const plant = await readPlant(paths, name);
      if (plant.name === name) continue;
      problems.push({ check: 'plants', file, field: 'name', message: `name ${JSON.stringify(plant.name)} is not its directory's (${name}); correct the field by hand` });
      continue;
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      if (error.code === 'PLANT_NOT_FOUND') text = 'no meta.json';
      else {
        text = error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message;
        const named = /^([\w.[\]-]+): [A-Z_]+ \(/.exec(text)?.[1];
        if (named && named !== '(document)') field = named;
      }
    }
    const rebuilt = await plantFromEvents(paths, name);
    const base = { check: 'plants' as const, file, ...(field ? { field } : {}) };
    if (!rebuilt) {
      problems.push({ ...base, message: `${text}; pak2 cannot read plant ${name}, and the event log never saw it commissioned: correct the record by hand (or commission it with pak2 plant commission)` });
      continue;
    }
    problems.push({
      ...base,
      message: `${text}; pak2 cannot read plant ${name}, so goals assigned to it cannot dispatch`,
      fix: `rebuild it from the event log (seed ${rebuilt.seed}, ${rebuilt.status}, commissioned ${rebuilt.commissioned_at}; a description is not in the log)${fs.existsSync(file) ? ', copying the damaged file aside' : ''}`,
      repair: async (c) => {
        try {
          await readPlant(paths, name);
          throw new NotFixed('the record reads now; left as it is');
        } catch (error) {
          if (error instanceof NotFixed || !(error instanceof StoreError)) throw error;
        }
        // Copied aside, then replaced by one checked atomic write: a write that fails (a full disk) leaves the file as it was.
        const moved = fs.existsSync(file) ? await c.aside.copy(file) : undefined;
        await writeJsonAtomic(file, rebuilt);
        return `rebuilt it from the event log${moved ? `; a copy of the damaged file is at ${moved}` : ''}`;
      },
    });
  }
  return problems;
}
