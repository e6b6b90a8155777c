import type { Garden } from '../garden/index.js';
import type { Aside } from './aside.js';
import type { CoordinatorPresence } from './presence.js';

/** The checks `pak2 doctor` runs, in the order it runs them (docs/doctor/level2.md). */
export const DOCTOR_CHECKS = ['config', 'lock', 'store', 'goals', 'ledger', 'runs', 'leases', 'plants', 'schedules', 'dashboard', 'events', 'processes', 'runtime-git', 'ignore', 'worktrees'] as const;

/** One check's name. */
export type DoctorCheck = (typeof DOCTOR_CHECKS)[number];

/** What each check looks at, in a few words: the report's line for a check (docs/doctor/level2.md, "The checks, in order"). */
export const CHECK_WORDS: Record<DoctorCheck, string> = {
  config: 'PAK2.toml parses and validates',
  lock: 'the coordinator lock and its holder: held by a live coordinator, or none left behind',
  store: 'the PostgreSQL store: reachable, its schema version, stuck leases, orphaned runs',
  goals: 'every goal file: its name, its JSON, validateGoal',
  ledger: 'the closed-goal ledger against the goal files',
  runs: "every run's meta.json against its seal; running runs have a live agent or a holder",
  leases: "remote runners' leases and the goals their finish left unsettled",
  plants: 'every plant record reads and names its directory',
  schedules: 'schedules.json reads and validates',
  dashboard: 'every dashboard invocation record reads and validates',
  events: 'the event log: no torn or unreadable line',
  processes: 'no agent process of a run nobody watches',
  'runtime-git': "the runtime history's git repository (split gardens)",
  ignore: 'git ignores the runtime root (a garden in a git work tree)',
  worktrees: 'run worktrees and landings: nothing left behind',
};

/**
 * One check as the report lists it: whether it ran (`skipped` says why not:
 * PAK2.toml did not load, the store stands for a file check) and how many
 * findings it made.
 */
export interface CheckResult {
  check: DoctorCheck;
  ran: boolean;
  skipped?: string;
  findings: number;
}

/**
 * One problem doctor found, as `--json` prints it. `file` is absolute;
 * `field` names the field (or line) where it applies; `fix` is the safe fix
 * `--fix` would make (after `--fix`, what it did); `fixed` is set only when
 * `--fix` ran: true when the problem was repaired, false when it remains.
 */
export interface Finding {
  check: DoctorCheck;
  file: string;
  field?: string;
  message: string;
  fix?: string;
  fixed?: boolean;
}

/**
 * A finding with the repair that makes its fix. `repair` returns what it did
 * (the words that replace `fix`) and throws to say why it could not.
 */
export interface Problem extends Finding {
  repair?: (ctx: DoctorContext) => Promise<string>;
}

/** What every check gets: the garden, who holds it, where moved-aside files go. */
export interface DoctorContext {
  garden: Garden;
  presence: CoordinatorPresence;
  aside: Aside;
  /** The environment, for git (PATH). */
  env: NodeJS.ProcessEnv;
}

/** A refusal a repair throws when the state changed under it; its message becomes the "not fixed" reason. */
export class NotFixed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFixed';
  }
}
