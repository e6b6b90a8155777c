import type { GoalRecord } from '../contracts/index.js';
import { reloadConfig, type BudgetConfig, type Garden } from '../garden/index.js';
import { appendEvent, deliverReplyNote, readBudgetWarned, writeBudgetWarned } from '../store/index.js';
import { BudgetBook, capsFor, decideDispatch, decideRunStop, decideWarnings, describeVerdict, type BudgetWarningItem, type CapVerdict } from '../budget/index.js';
import type { LaunchSpend, StopDetail } from '../driver/index.js';

/**
 * Where the coordinator acts on budgets (docs/budget/level2.md): the
 * ledger ({@link BudgetBook}) refreshed each pass, the caps read again when
 * PAK2.toml or budget.json changes, the dispatch decision for each queued
 * goal, the stop decision each time a live run's spend moves, and the
 * warnings (one `BudgetWarning` event and one inbox note per cap and period).
 * The decisions are the pure functions of source/budget/decide.ts.
 */
export class BudgetGate {
  readonly book: BudgetBook;
  private readonly runs = new Map<string, { goal: GoalRecord; plant: string }>();
  private warned: Set<string> | undefined;
  private warning: Promise<void> = Promise.resolve();
  private saidBook: string | undefined;

  constructor(
    private readonly garden: Garden,
    private readonly now: () => Date,
    private readonly stop: (runId: string, detail: StopDetail) => void,
    private readonly onProblem: (message: string) => void = () => undefined,
  ) {
    this.book = new BudgetBook(garden);
  }

  /** The `[budget]` in force: PAK2.toml as last read (a file that no longer loads keeps the caps read before; source/garden/reload.ts). */
  private get budgetValue(): BudgetConfig {
    return this.garden.config.budget;
  }

  /** The `[budget]` in force (PAK2.toml as last read). */
  get budget(): BudgetConfig {
    return this.budgetValue;
  }

  /** Reads new spend from the event log, budget.json, and PAK2.toml if the file changed; then warns. */
  async refresh(goals: readonly GoalRecord[] = []): Promise<void> {
    reloadConfig(this.garden);
    await this.book.refresh();
    // Said once per problem, not once per pass.
    if (this.book.problem && this.book.problem !== this.saidBook) this.onProblem(`budget: ${this.book.problem}; nothing is dispatched until budget.json is fixed or removed`);
    this.saidBook = this.book.problem;
    await this.warn(goals);
  }

  private capsOf(goal: GoalRecord) {
    const routing = goal.task_class ? this.garden.config.routing[goal.task_class]?.budgetUsd : undefined;
    return capsFor(this.budgetValue, this.book.overrides, goal, routing);
  }

  /**
   * Whether a queued goal's next run may start now: undefined, or why not —
   * `reason` stable while the hold lasts, `detail` with what is spent and
   * left (see decideDispatch). While budget.json cannot be read every goal
   * waits: caps the operator set are not dropped for a damaged file.
   */
  holdFor(goal: GoalRecord): { reason: string; detail: string; verdict?: CapVerdict } | undefined {
    if (!goal.assigned_to) return undefined;
    if (this.book.problem) return { reason: 'budget: budget.json cannot be read', detail: `budget: the caps set with pak2 budget set cannot be read (${this.book.problem}); nothing is dispatched until budget.json is fixed or removed` };
    const verdict = decideDispatch(this.capsOf(goal), this.book.facts(), { id: goal.id, plant: goal.assigned_to }, this.now(), this.budgetValue.timezone);
    return verdict ? { reason: `budget: ${verdict.cap} cap $${verdict.cap_usd.toFixed(2)} reached`, detail: `budget: ${describeVerdict(verdict)}`, verdict } : undefined;
  }

  /** A run this coordinator dispatched: its spend will be followed. */
  track(runId: string, goal: GoalRecord): void {
    this.runs.set(runId, { goal, plant: goal.assigned_to ?? 'unknown' });
  }

  /** The run's processes are gone: its spend counts from its RunClosed on. */
  untrack(runId: string): void {
    this.runs.delete(runId);
  }

  /**
   * A live run's spend moved (USD so far): past a cap it is stopped, `killed`
   * / `budget_exceeded` — unless the figure came with its result
   * (`reported`): a turn that ended is not stopped (its record would say
   * killed for work that finished); its spend counts against what comes next.
   */
  onSpend(runId: string, spend: LaunchSpend, reported = false): void {
    const tracked = this.runs.get(runId);
    if (!tracked) return;
    const live = { run: runId, goal: tracked.goal.id, plant: tracked.plant, usd: spend.usd };
    this.book.setLive(live);
    const verdict = reported ? undefined : decideRunStop(this.capsOf(tracked.goal), this.book.facts(), live, this.now(), this.budgetValue.timezone);
    if (verdict) {
      this.stop(runId, { message: `stopped: ${describeVerdict(verdict)}; it had spent $${spend.usd.toFixed(2)} (${spend.source})`, budget: { cap: verdict.cap, cap_usd: verdict.cap_usd, spent_usd: verdict.spent_usd } });
    }
    void this.warn([tracked.goal]);
  }

  /**
   * One BudgetWarning and one inbox note per cap crossing its warning share.
   * Decided now, from the spend as it is now (the warned set is marked at
   * once); said in order, one write at a time.
   */
  private warn(goals: readonly GoalRecord[]): Promise<void> {
    const byId = new Map<string, { budget_usd?: number; routingBudgetUsd?: number }>();
    for (const g of [...goals, ...[...this.runs.values()].map((r) => r.goal)]) {
      const routingBudgetUsd = g.task_class ? this.garden.config.routing[g.task_class]?.budgetUsd : undefined;
      byId.set(g.id, { ...(g.budget_usd !== undefined ? { budget_usd: g.budget_usd } : {}), ...(routingBudgetUsd !== undefined ? { routingBudgetUsd } : {}) });
    }
    const decide = (warned: Set<string>) => {
      const items = decideWarnings(this.budgetValue, this.book.overrides, this.book.facts(), byId, this.now(), warned);
      for (const item of items) warned.add(item.key);
      return items;
    };
    const now = this.warned ? decide(this.warned) : undefined;
    this.warning = this.warning
      .then(async () => {
        this.warned ??= await readBudgetWarned(this.garden.paths);
        const items = now ?? decide(this.warned);
        if (items.length === 0) return;
        for (const item of items) await this.say(item);
        await writeBudgetWarned(this.garden.paths, [...this.warned].slice(-2000));
      })
      .catch((error: Error) => this.onProblem(`budget warning: ${error.message}`));
    return this.warning;
  }

  private async say(item: BudgetWarningItem): Promise<void> {
    const { paths, config } = this.garden;
    const pct = Math.floor((item.spent_usd / item.cap_usd) * 100);
    const where = item.scope ? ` of ${item.scope}` : '';
    const words = `${item.cap} cap${where}: $${item.spent_usd.toFixed(2)} of $${item.cap_usd.toFixed(2)} spent (${pct}%)`;
    await appendEvent(paths, { type: 'BudgetWarning', reason: item.cap, detail: words, ...(item.cap === 'goal' && item.scope ? { goal: item.scope } : {}) }, this.now());
    await deliverReplyNote(paths, config, `budget-${item.key.replace(/[^a-z0-9-]+/gi, '-')}`, `# Budget: ${words}\n\nAt ${Math.round(this.budgetValue.warnRatio * 100)} % of a cap pak2 warns once. Runs stop at the cap (\`killed\` / \`budget_exceeded\`) and goals wait for it to be raised: \`pak2 budget\` shows every cap; \`pak2 budget set ${item.cap}_usd <USD>\` raises one.\n`, this.now());
  }
}
