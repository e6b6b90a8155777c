import path from 'node:path';
import type { GoalRecord } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { appendJsonLine, readJsonFile, readJsonLines, StoreError, writeJsonAtomic } from './files.js';
import { goalFile, readGoal, storedRead } from './goals.js';
import { storeOf } from './backend.js';

/** One supplement: more context for a queued goal, added after it was submitted (docs/goal-supplement/level2.md). */
export interface GoalSupplement {
  ts: string;
  text: string;
  /** Who added it: the operator (chat, CLI) or the conversation's agent. */
  source: 'operator' | 'garden';
  conversation_id?: string;
}

/** The dispatch packet frozen in `runs/<run-id>/dispatch-packet.json` when an eligible goal is dispatched. */
export interface DispatchPacket {
  goal: string;
  run: string;
  conversation_id: string;
  frozen_at: string;
  supplements: GoalSupplement[];
}

/** `<runtime-root>/supplements/<goal-id>.jsonl`. */
export function supplementsFile(paths: GardenPaths, goalId: string): string {
  goalFile(paths, goalId); // refuses a malformed id
  return path.join(paths.runtimeRoot, 'supplements', `${goalId}.jsonl`);
}

/**
 * True for a conversation-origin durable goal: queued from a conversation
 * (`conversation_id`) for real work, not a conversational reply (`converse`)
 * or a post-reply hop.
 */
export function isSupplementEligible(goal: GoalRecord): boolean {
  return !!goal.conversation_id && goal.type !== 'converse' && !goal.post_reply_hop;
}

/**
 * Adds a supplement to a queued, eligible goal (seed 002, submit.py
 * `append_goal_supplement`). Supplements are read when the goal is dispatched
 * and frozen into that run's dispatch packet; a supplement added after
 * dispatch is refused, since the run already has its packet.
 *
 * @throws StoreError GOAL_NOT_FOUND; INVALID_TRANSITION when the goal is not
 *   eligible or no longer queued; INVALID_RECORD for empty text.
 */
export async function appendGoalSupplement(paths: GardenPaths, goalId: string, text: string, source: GoalSupplement['source'] = 'operator', now: Date = new Date()): Promise<GoalSupplement> {
  const goal = await readGoal(paths, goalId);
  if (!isSupplementEligible(goal)) {
    throw new StoreError('INVALID_TRANSITION', `goal ${goalId} takes no supplements: only a conversation-origin durable goal (with conversation_id, not converse) does`);
  }
  if (goal.status !== 'queued') throw new StoreError('INVALID_TRANSITION', `goal ${goalId} is ${goal.status}; supplements are added before dispatch`);
  if (!text.trim()) throw new StoreError('INVALID_RECORD', 'supplement text is empty');
  const supplement: GoalSupplement = { ts: now.toISOString(), text: text.trim(), source, conversation_id: goal.conversation_id! };
  const store = storeOf(paths);
  if (store) await store.appendDocumentLine('supplement', goalId, supplement);
  else await appendJsonLine(supplementsFile(paths, goalId), supplement);
  return supplement;
}

/** A goal's supplements, oldest first (torn lines skipped). */
export async function readSupplements(paths: GardenPaths, goalId: string): Promise<GoalSupplement[]> {
  const isSupplement = (v: unknown) => typeof (v as GoalSupplement)?.text === 'string';
  const file = supplementsFile(paths, goalId); // refuses a malformed id
  const store = storeOf(paths);
  if (store) return (await store.documentLines('supplement', goalId)).map((line) => line.record).filter(isSupplement) as GoalSupplement[];
  return readJsonLines<GoalSupplement>(file, isSupplement);
}

/**
 * The dispatch packet frozen for a run ({@link freezeDispatchPacket}), or
 * undefined when none was (a goal that takes no supplements, a run not yet
 * dispatched). Unvalidated beyond being an object.
 */
export async function readDispatchPacket(paths: GardenPaths, runId: string): Promise<DispatchPacket | undefined> {
  const store = storeOf(paths);
  const read = store ? storedRead(await store.documentRecord('dispatch-packet', runId)) : await readJsonFile(path.join(runDir(paths, runId), 'dispatch-packet.json'));
  return read.ok && typeof read.value === 'object' && read.value !== null ? (read.value as DispatchPacket) : undefined;
}

/**
 * Freezes the dispatch packet of an eligible goal's run: its supplements as
 * they are now, written once to `runs/<run-id>/dispatch-packet.json`.
 *
 * @returns the packet, or undefined for a goal that is not eligible.
 */
export async function freezeDispatchPacket(paths: GardenPaths, goal: GoalRecord, runId: string, now: Date = new Date()): Promise<DispatchPacket | undefined> {
  if (!isSupplementEligible(goal)) return undefined;
  const packet: DispatchPacket = { goal: goal.id, run: runId, conversation_id: goal.conversation_id!, frozen_at: now.toISOString(), supplements: await readSupplements(paths, goal.id) };
  const store = storeOf(paths);
  if (store) await store.putDocument('dispatch-packet', runId, packet);
  else await writeJsonAtomic(path.join(runDir(paths, runId), 'dispatch-packet.json'), packet);
  return packet;
}

/** Renders a packet's supplements for the prompt's `# Goal Supplements` block. */
export function renderSupplements(packet: DispatchPacket): string | undefined {
  if (packet.supplements.length === 0) return undefined;
  return [
    `Added to this goal after it was queued (conversation ${packet.conversation_id}), oldest first:`,
    '',
    ...packet.supplements.map((s, i) => `${i + 1}. (${s.source}, ${s.ts}) ${s.text}`),
  ].join('\n');
}
