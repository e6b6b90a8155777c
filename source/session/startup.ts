import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { formatCost } from '../format.js';
import { resolveSettings, type Garden } from '../garden/index.js';
import { pluginDefaults } from '../driver/plugins/index.js';
import { gardenIsolationNow } from '../worktree/index.js';
import { blockedChains, readDependencyViews } from '../coordinator/readiness.js';
import { whyNobodyTakes } from '../coordinator/takers.js';
import {
  appendConversationMessage,
  deliverReplyNote,
  ensureReplyDir,
  listConversations,
  dispatchOrder,
  listPlants,
  listRuns,
  OpenGoalScanner,
  openConversation,
  readConversationMessages,
  readGoal,
  type ConversationMeta,
} from '../store/index.js';

/** Facts the startup window reports, as `ChatMessage.fact` values, so each is said once. */
export const STARTUP_FACTS = {
  note: 'startup_note',
  runStarted: (runId: string) => `run_started:${runId}`,
  runClosed: (runId: string) => `run_closed:${runId}`,
  replyNote: (name: string) => `reply_note:${name}`,
} as const;

/** The most text of a reply note copied into the conversation. */
const NOTE_TEXT_MAX = 4000;

/**
 * The compact startup note, built only from what is recorded on disk:
 * PAK2.toml, the plants, the goals (seed 002, "Startup contract").
 */
export async function buildStartupNote(garden: Garden, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { paths, config } = garden;
  const plants = (await listPlants(paths)).plants;
  // The open goals only: a garden's history is not read to say what is queued.
  const goals = (await new OpenGoalScanner(paths).scan()).goals.sort(dispatchOrder);
  const settings = resolveSettings({}, config, env, (d) => pluginDefaults(d, config));
  const isolation = await gardenIsolationNow(garden, env);
  const chains = blockedChains(await readDependencyViews(paths, goals).catch(() => new Map()));
  const lines = [
    `# ${config.gardenName}: pak2 is starting`,
    '',
    `- Garden: ${paths.gardenRoot} (runtime root ${path.relative(paths.gardenRoot, paths.runtimeRoot) || '.'})`,
    `- Plants: ${plants.map((p) => `${p.name} (seed ${p.seed})`).join(', ') || 'none'}`,
    `- Queued: ${goals.length} goal${goals.length === 1 ? '' : 's'}${goals.length ? ` — ${goals.slice(0, 5).map((g) => `${g.id} (${g.type}, ${g.assigned_to ?? 'no plant'})`).join('; ')}` : ''}`,
    // Blocked chains (docs/goal/level2.md, "Dependencies"): what waits on the operator, by the dependency that failed.
    ...chains.map((c) => `- Blocked: ${c.goals.length} goal${c.goals.length === 1 ? '' : 's'} blocked by ${c.root} (${c.closed_reason}) — pak2 retry ${c.root}, pak2 depends GOAL --drop ${c.root}, or cancel`),
    `- Driver: ${settings.driver}, model ${settings.model ?? 'default'}${settings.reasoningEffort ? `, effort ${settings.reasoningEffort}` : ''}`,
    `- Watchdog ${config.coordinator.watchdogSeconds} s, run limit ${config.coordinator.runTimeoutSeconds} s, ${config.coordinator.maxConcurrentRuns ? `${config.coordinator.maxConcurrentRuns} run(s) at a time` : 'no runs here: remote runners (pak2 runner) take the goals'}`,
    isolation.mode === 'worktree'
      ? `- Each run works in a git worktree of its own, from ${isolation.base}; its work lands on ${isolation.base} ${config.merge.mode === 'review' ? 'when you accept it (pak2 land, or a in the diff)' : 'once verified on the merged result'}`
      : isolation.held
        ? `- No run starts here: ${isolation.reason}`
        : `- Every run works in the garden's own tree${isolation.reason ? ` (${isolation.reason.replace(/^runs work in the garden's own tree: /, '')})` : ''}`,
    '',
    // No chat is invited that would be refused (docs/runners/level2.md, "Who runs what").
    whyNobodyTakes({ type: 'converse', assigned_to: 'gardener' }, config)
      ? 'I will post short updates on the first run here. Chat is off: this garden\'s coordinator runs no goals and remote runners do not answer a conversation (set [coordinator] max_concurrent_runs to 1 or more to chat).'
      : 'I will post short updates on the first run here until you write. Reply with `pak2 chat` or the chat pane.',
  ];
  return `${lines.join('\n')}\n`;
}

/** A file of the reply directory, as the startup window sees it. */
export interface ReplyDirNote {
  name: string;
  path: string;
  /** Last modification, ms since the epoch. */
  mtimeMs: number;
}

/** When a run was live: from `started_at` to `completed_at` (undefined while it runs). */
export interface RunSpan {
  id: string;
  startedMs: number;
  endedMs?: number;
}

/** True for pak2's own deliveries in the reply directory (the startup note, chat replies), never an agent's note. */
export function isPak2Delivery(name: string): boolean {
  return /-startup\.md$|-reply-/.test(name);
}

/**
 * The reply notes that are the first durable run's own (seed 002, "Startup
 * contract": "If that run writes a new filesystem reply note …"), from
 * recorded facts only: a Markdown note in the reply directory, not one of
 * pak2's deliveries, last written while that run was live (from its
 * `started_at` to its `completed_at`, or now while it runs), and not while
 * any other run was live too (a note no single run can be said to have
 * written is not posted as the first run's). `nowMs` closes open spans.
 * Pure; sorted by name.
 */
export function firstRunNotes(notes: readonly ReplyDirNote[], first: RunSpan, others: readonly RunSpan[], nowMs: number): ReplyDirNote[] {
  const live = (span: RunSpan, at: number) => at >= span.startedMs && at <= (span.endedMs ?? nowMs);
  return notes
    .filter((n) => n.name.endsWith('.md') && !isPak2Delivery(n.name))
    .filter((n) => live(first, n.mtimeMs) && !others.some((o) => o.id !== first.id && live(o, n.mtimeMs)))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Whether the startup window is closed, from the conversation's messages
 * (seed 002: the play-by-play is "for the first durable run", "before that
 * system-started conversation has received an operator message"): closed
 * once the operator has written in it, or once the first run's close has
 * been said (nothing is left to tell about that run).
 */
export function startupWindowClosed(messages: readonly { sender: string; fact?: string | undefined }[]): boolean {
  return messages.some((m) => m.sender === 'operator' || m.fact?.startsWith('run_closed:'));
}

/**
 * The startup window of `pak2 cycle` (seed 002, "Startup contract"). Before
 * any run has started, {@link open} makes sure the reply surface exists,
 * opens one conversation with started_by "system", delivers the startup note
 * to the inbox and, only once that delivery succeeded, records it in the
 * conversation. Until the operator's first message in that conversation,
 * {@link update} appends short play-by-play lines for the first durable run
 * from its recorded lifecycle facts, and one sender "garden" message per new
 * reply note that run writes ({@link firstRunNotes}), with the run and the
 * note path. The window closes with the operator's first message, or once
 * the first run's close has been said ({@link startupWindowClosed}); a
 * closed window is not reopened by a restart.
 */
export class StartupWindow {
  private conversation: ConversationMeta | undefined;

  constructor(
    private readonly garden: Garden,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** Whether the window is open (play-by-play may still be appended). */
  get isOpen(): boolean {
    return this.conversation !== undefined;
  }

  /**
   * Opens the window when this is a fresh garden (no run has ever started) and
   * no startup conversation exists yet; otherwise resumes an open one (a
   * closed one stays closed).
   *
   * @returns the conversation, or undefined when there is no startup window.
   */
  async open(now: Date = new Date()): Promise<ConversationMeta | undefined> {
    const { paths, config } = this.garden;
    const existing = (await listConversations(paths)).find((c) => c.startup);
    if (existing) {
      if (startupWindowClosed(await readConversationMessages(paths, existing.id, 100_000))) return undefined;
      this.conversation = existing;
      return existing;
    }
    const anyRun = fs.existsSync(paths.runsDir) && fs.readdirSync(paths.runsDir).length > 0;
    if (anyRun) return undefined;
    await ensureReplyDir(paths, config);
    const text = await buildStartupNote(this.garden, this.env);
    const conversation = await openConversation(paths, 'system', now, { startup: true });
    const note = await deliverReplyNote(paths, config, 'startup', text, now);
    // Recorded only after the delivery succeeded.
    await appendConversationMessage(paths, conversation.id, { sender: 'system', text: text.trim(), note, fact: STARTUP_FACTS.note }, now);
    this.conversation = conversation;
    return conversation;
  }

  /** Appends what is new about the first durable run; nothing once the window has closed. */
  async update(now: Date = new Date()): Promise<void> {
    const conversation = this.conversation;
    if (!conversation) return;
    const { paths, config } = this.garden;
    const messages = await readConversationMessages(paths, conversation.id, 100_000);
    if (startupWindowClosed(messages)) {
      this.conversation = undefined;
      return;
    }
    const said = new Set(messages.map((m) => m.fact).filter(Boolean));
    const say = async (fact: string, text: string, extra: { run?: string; note?: string; sender?: 'system' | 'garden' } = {}) => {
      if (said.has(fact)) return;
      said.add(fact);
      await appendConversationMessage(paths, conversation.id, { sender: extra.sender ?? 'system', text, fact, ...(extra.run ? { run: extra.run } : {}), ...(extra.note ? { note: extra.note } : {}) }, now);
    };

    const runs = (await listRuns(paths)).runs.sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at) || (a.id < b.id ? -1 : 1));
    let first;
    for (const run of runs) {
      const goal = await readGoal(paths, run.goal).catch(() => undefined);
      if (goal && goal.type !== 'converse') {
        first = run;
        break;
      }
    }
    if (!first) return;
    await say(STARTUP_FACTS.runStarted(first.id), `Run ${first.id} started (${first.driver}/${first.model}).`, { run: first.id });

    const dir = path.join(paths.inboxDir, config.gardenName);
    const notes: ReplyDirNote[] = [];
    for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
      if (!name.endsWith('.md') || isPak2Delivery(name)) continue;
      const file = path.join(dir, name);
      const stat = await fsp.stat(file).catch(() => undefined);
      if (stat?.isFile()) notes.push({ name, path: file, mtimeMs: stat.mtimeMs });
    }
    const span = (run: (typeof runs)[number]): RunSpan => ({ id: run.id, startedMs: Date.parse(run.started_at), ...(run.completed_at ? { endedMs: Date.parse(run.completed_at) } : {}) });
    for (const note of firstRunNotes(notes, span(first), runs.map(span), now.getTime())) {
      const text = (await fsp.readFile(note.path, 'utf8').catch(() => '')).trim();
      if (!text) continue;
      await say(STARTUP_FACTS.replyNote(note.name), text.length > NOTE_TEXT_MAX ? `${text.slice(0, NOTE_TEXT_MAX)}…` : text, { sender: 'garden', run: first.id, note: note.path });
    }

    if (first.status !== 'running') {
      const outcome = first.status === 'success' ? 'succeeded' : `ended ${first.status}${first.failure_reason ? ` (${first.failure_reason})` : ''}`;
      const cost = first.cost ? `, cost ${formatCost(first.cost)} (${first.cost.source})` : '';
      await say(STARTUP_FACTS.runClosed(first.id), `Run ${first.id} ${outcome}${cost}${first.reflection ? '; reflection recorded' : ''}.`, { run: first.id });
      // The first run's close is the window's last word (seed 002: the play-by-play is for that run).
      this.conversation = undefined;
    }
  }
}
