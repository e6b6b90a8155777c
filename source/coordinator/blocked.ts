import path from 'node:path';
import type { GardenPaths } from '../garden/index.js';
import { appendEvent, DOCUMENT_FILES, GARDEN_KEY, inStoreTransaction, readJsonFile, storedRead, storedWhere, storeOf, writeJsonAtomic, type JsonRead } from '../store/index.js';

/** `<runtime-root>/coordinator.blocked.json`: goal id → why it cannot dispatch, as last reported. */
export function blockedFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'coordinator.blocked.json');
}

/** The reported set as read (a store's document, else the file), and where it is, as a message names it. */
async function readReported(paths: GardenPaths): Promise<{ read: JsonRead; where: string }> {
  const store = storeOf(paths);
  if (store) return { read: storedRead(await store.documentRecord('coordinator-blocked', GARDEN_KEY)), where: storedWhere(store.where, DOCUMENT_FILES['coordinator-blocked']()) };
  return { read: await readJsonFile(blockedFile(paths)), where: blockedFile(paths) };
}

/**
 * Reports queued goals that cannot dispatch (docs/coordinator/level2.md,
 * "Blocked goals"): one `GoalBlocked` event per goal and reason, not one
 * per pass. The reported set is kept in {@link blockedFile}, so a restart
 * does not repeat it; a goal that is no longer blocked drops out, and is
 * reported again if it becomes blocked again. `code` is the event's
 * `reason` (`budget`; a plant block has none; a reason starting
 * `dependency ` is reported `dependency`, docs/goal/level2.md,
 * "Dependencies"); `detail` the words of the event when they say more than
 * the stable `reason` (what is left of a cap moves, the block does not).
 * Writes nothing when nothing changed. On a store, the events and the set
 * commit together.
 */
export async function reportBlocked(paths: GardenPaths, blocked: { goal: string; reason: string; code?: string; detail?: string }[], now: Date): Promise<void> {
  return inStoreTransaction(paths, () => report(paths, blocked, now));
}

async function report(paths: GardenPaths, blocked: { goal: string; reason: string; code?: string; detail?: string }[], now: Date): Promise<void> {
  const { read } = await readReported(paths);
  const before: Record<string, string> = read.ok && typeof read.value === 'object' && read.value !== null ? (read.value as Record<string, string>) : {};
  const after: Record<string, string> = {};
  for (const { goal, reason, code, detail } of blocked) {
    after[goal] = reason;
    if (before[goal] === reason) continue;
    const kind = code ?? (blockKind(reason) === 'dependency' ? 'dependency' : undefined);
    await appendEvent(paths, { type: 'GoalBlocked', goal, ...(kind ? { reason: kind } : {}), detail: `cannot dispatch: ${detail ?? reason}; it waits in the queue` }, now);
  }
  if (JSON.stringify(before) === JSON.stringify(after) || (!read.ok && blocked.length === 0)) return;
  const store = storeOf(paths);
  if (store) await store.putDocument('coordinator-blocked', GARDEN_KEY, after);
  else await writeJsonAtomic(blockedFile(paths), after);
}

/**
 * The queued goals the coordinator last reported blocked ({@link blockedFile}):
 * goal id → reason. Absent or unreadable: none (an unreadable file is one
 * line in `problems` when given).
 */
export async function readBlocked(paths: GardenPaths, problems?: string[]): Promise<Record<string, string>> {
  const { read, where } = await readReported(paths);
  if (!read.ok) {
    if (!read.missing) problems?.push(read.message);
    return {};
  }
  const value = read.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems?.push(`${where}: not a JSON object of goal id → reason`);
    return {};
  }
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/**
 * What holds a queued goal, from the reason it was reported with: `budget`
 * (a reason starting `budget`), `dependency` (starting `dependency `),
 * `nobody` (starting `nobody can take it`: no coordinator slot and no
 * runner may take it, source/coordinator/takers.ts), else `plant`. A word
 * safe in an id and a shell, the same while a hold's amounts move.
 */
export function blockKind(reason: string): 'budget' | 'dependency' | 'nobody' | 'plant' {
  return reason.startsWith('budget') ? 'budget' : reason.startsWith('dependency ') ? 'dependency' : reason.startsWith('nobody can take it') ? 'nobody' : 'plant';
}
