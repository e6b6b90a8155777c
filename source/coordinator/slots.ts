import type { GoalRecord } from '../contracts/index.js';

/**
 * Local run slots (docs/coordinator/level2.md, "Conversation slots"): a
 * conversation reply does not wait behind an hour-long run. Pure: the
 * reconcile pass and the chat's "waiting: …" line read the same rules.
 */

/** The limits of PAK2.toml's `[coordinator]`: `max_concurrent_runs` and `conversation_slots`. */
export interface SlotLimits {
  maxConcurrentRuns: number;
  conversationSlots: number;
}

/** Live local runs (remote runs take no local slot), by kind. */
export interface SlotUse {
  /** Runs of conversation replies ({@link isConversationReply}). */
  replies: number;
  /** Every other run. */
  ordinary: number;
}

/**
 * True for a conversation reply: a `converse` goal of a conversation that
 * is not a post-reply hop (a hop does work the reply promised: ordinary
 * work, in an ordinary slot).
 */
export function isConversationReply(goal: Pick<GoalRecord, 'type' | 'conversation_id' | 'post_reply_hop'>): boolean {
  return goal.type === 'converse' && !!goal.conversation_id && !goal.post_reply_hop;
}

/** The ordinary slots taken: ordinary runs, and replies beyond the conversation slots (they spilled into ordinary ones). */
export function ordinarySlotsTaken(use: SlotUse, limits: SlotLimits): number {
  return use.ordinary + Math.max(0, use.replies - limits.conversationSlots);
}

/**
 * Whether a goal may start a local run now. An ordinary goal needs one of
 * the `max_concurrent_runs` slots. A reply takes one of the
 * `conversation_slots` first, else an ordinary slot. With
 * `max_concurrent_runs` 0 nothing runs here (remote runners take the
 * goals), replies included.
 */
export function slotFree(reply: boolean, use: SlotUse, limits: SlotLimits): boolean {
  if (limits.maxConcurrentRuns <= 0) return false;
  const ordinaryFree = ordinarySlotsTaken(use, limits) < limits.maxConcurrentRuns;
  return reply ? use.replies < limits.conversationSlots || ordinaryFree : ordinaryFree;
}

/** What a queued conversation reply waits for, as observed (the facts {@link replyWaitWords} reads). */
export interface ReplyWaitFacts {
  /** Whether a coordinator holds the garden (the lock, or this process). */
  coordinator: boolean;
  limits: SlotLimits;
  /** Live local runs (oldest first), each with whether it is a reply and a guarded run. */
  live: readonly { run: string; reply: boolean; guarded?: boolean }[];
  /** Why the coordinator reported the goal cannot dispatch (coordinator.blocked.json), if it did. */
  blocked?: string;
  /** Its dependencies not yet closed. */
  waitingFor?: readonly string[];
  /** Whether runs work in the garden's own tree (a guarded run there has it to itself). */
  tree?: boolean;
}

/**
 * What a queued conversation reply waits for, in one line for the chat
 * (`pak2 chat`, the workbench's chat pane): `waiting for a coordinator …`,
 * `waiting: 1 conversation slot busy (run 3-a-r1) and 1 run slot busy (run
 * 2-b-r1)`, `waiting: <why it is blocked>`, `waiting for a remote runner
 * …`, or `waiting for the coordinator's next pass` when nothing holds it.
 */
export function replyWaitWords(facts: ReplyWaitFacts): string {
  if (!facts.coordinator) return 'waiting for a coordinator: start `pak2` or `pak2 cycle` in another terminal';
  if (facts.blocked) return `waiting: ${facts.blocked}`;
  if (facts.waitingFor?.length) return `waiting for ${facts.waitingFor.join(', ')} to close`;
  const { limits } = facts;
  if (limits.maxConcurrentRuns <= 0) return 'waiting for a remote runner: max_concurrent_runs = 0 runs nothing on this machine';
  const replies = facts.live.filter((l) => l.reply);
  const ordinary = facts.live.filter((l) => !l.reply);
  const use = { replies: replies.length, ordinary: ordinary.length };
  if (!slotFree(true, use, limits)) {
    const runs = (list: readonly { run: string }[]) => `run${list.length === 1 ? '' : 's'} ${list.map((l) => l.run).join(', ')}`;
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
    const parts: string[] = [];
    if (limits.conversationSlots > 0) parts.push(`${plural(limits.conversationSlots, 'conversation slot')} busy (${runs(replies.slice(0, limits.conversationSlots))})`);
    const spilled = [...ordinary, ...replies.slice(limits.conversationSlots)];
    parts.push(`${plural(limits.maxConcurrentRuns, 'run slot')} busy (${runs(spilled)})`);
    return `waiting: ${parts.join(' and ')}`;
  }
  const guarded = facts.tree ? facts.live.find((l) => l.guarded) : undefined;
  if (guarded) return `waiting: the guarded run ${guarded.run} has the work tree to itself`;
  return "waiting for the coordinator's next pass";
}
