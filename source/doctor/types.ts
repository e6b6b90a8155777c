import type { Garden } from '../garden/index.js';
import type { Aside } from './aside.js';
import type { CoordinatorPresence } from './presence.js';

/** The checks `pak2 doctor` runs, in the order it runs them (docs/doctor/level2.md). */
export const DOCTOR_CHECKS = ['config', 'lock', 'store', 'goals', 'ledger', 'runs', 'leases', 'plants', 'schedules', 'dashboard', 'events', 'processes', 'runtime-git', 'ignore', 'worktrees'] as const;

/** One check's name. */
export type DoctorCheck = (typeof DOCTOR_CHECKS)[number];

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
