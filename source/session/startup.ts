import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { formatCost } from '../format.js';
import { resolveSettings, type Garden } from '../garden/index.js';
import { pluginDefaults } from '../driver/plugins/index.js';
import { gardenIsolationNow } from '../worktree/index.js';
import { blockedChains, readDependencyViews } from '../coordinator/readiness.js';
import { tendView, tendWords, type TendView } from '../snapshot/tend.js';
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
  // Said when automatic tends are not as the seeds have them (docs/automatic-tend/level2.md, "Operator control").
  const tends = startupTendLine(await tendView(garden, { open: goals }).catch(() => undefined));
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
    ...(tends ? [tends] : []),
    '',
    'I will post short updates on the first run here until you write. Reply with `pak2 chat` or the chat pane.',
  ];
  return `${lines.join('\n')}\n`;
}

/** The startup note's line about automatic tends when they are off, paused or capped (with the way back); undefined when they run as the seeds have them. */
export function startupTendLine(view: TendView | undefined): string | undefined {
  const words = tendWords(view);
  if (!view || !words) return undefined;
  const how =
    view.state === 'paused'
      ? view.problem
        ? `${view.problem}; fix or remove it`
        : `by ${view.paused?.by ?? 'the operator'} at ${view.paused?.at ?? '?'}; pak2 tend resume`
      : view.state === 'capped'
        ? `[tend] daily_cap; more tomorrow (${view.timezone})`
        : '[tend] in PAK2.toml';
  return `- Automatic ${words} (${how})`;
}

/**
 * The startup window of `pak2 cycle` (seed 002, "Startup contract"). Before
 * any run has started, {@link open} makes sure the reply surface exists,
 * opens one conversation with started_by "system", delivers the startup note
 * to the inbox and, only once that delivery succeeded, records it in the
 * conversation. Until the operator's first message in that conversation,
 * {@link update} appends short play-by-play lines for the first durable run
 * from its recorded lifecycle facts, and one sender "garden" message per new
 * reply note that run writes, with the run and the note path.
 */
export class StartupWindow {
  private conversation: ConversationMeta | undefined;

  constructor(
    private readonly garden: Garden,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /**
   * Opens the window when this is a fresh garden (no run has ever started) and
   * no startup conversation exists yet; otherwise resumes an open one.
   *
   * @returns the conversation, or undefined when there is no startup window.
   */
  async open(now: Date = new Date()): Promise<ConversationMeta | undefined> {
    const { paths, config } = this.garden;
    const existing = (await listConversations(paths)).find((c) => c.startup);
    if (existing) {
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

  /** Appends what is new about the first durable run; nothing once the operator has written. */
  async update(now: Date = new Date()): Promise<void> {
    const conversation = this.conversation;
    if (!conversation) return;
    const { paths, config } = this.garden;
    const messages = await readConversationMessages(paths, conversation.id, 100_000);
    if (messages.some((m) => m.sender === 'operator')) {
      this.conversation = undefined; // the window closes with the operator's first message
      return;
    }
    const said = new Set(messages.map((m) => m.fact).filter(Boolean));
    const say = async (fact: string, text: string, extra: { run?: string; note?: string; sender?: 'system' | 'garden' } = {}) => {
      if (said.has(fact)) return;
      said.add(fact);
      await appendConversationMessage(paths, conversation.id, { sender: extra.sender ?? 'system', text, fact, ...(extra.run ? { run: extra.run } : {}), ...(extra.note ? { note: extra.note } : {}) }, now);
    };

    const runs = (await listRuns(paths)).runs;
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
    const since = Date.parse(first.started_at);
    const names = await fsp.readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (!name.endsWith('.md') || /-startup\.md$|-reply-/.test(name)) continue; // pak2's own deliveries
      const file = path.join(dir, name);
      const stat = await fsp.stat(file).catch(() => undefined);
      if (!stat || stat.mtimeMs < since) continue;
      const text = (await fsp.readFile(file, 'utf8')).trim();
      await say(STARTUP_FACTS.replyNote(name), text.length > NOTE_TEXT_MAX ? `${text.slice(0, NOTE_TEXT_MAX)}…` : text, { sender: 'garden', run: first.id, note: file });
    }

    if (first.status !== 'running') {
      const outcome = first.status === 'success' ? 'succeeded' : `ended ${first.status}${first.failure_reason ? ` (${first.failure_reason})` : ''}`;
      const cost = first.cost ? `, cost ${formatCost(first.cost)} (${first.cost.source})` : '';
      await say(STARTUP_FACTS.runClosed(first.id), `Run ${first.id} ${outcome}${cost}${first.reflection ? '; reflection recorded' : ''}.`, { run: first.id });
    }
  }
}
