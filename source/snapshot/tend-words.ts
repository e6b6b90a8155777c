import { TEND_TRIGGERS, type AutomaticTendTrigger, type TendTrigger } from '../contracts/index.js';

/**
 * Automatic tends as the operator controls them (docs/automatic-tend/level2.md,
 * "Operator control"), what `pak2 tend status --json`, `GET /api/v1/tend`,
 * the status line and the startup note show. `state`: `on` (every trigger
 * on, not paused, under the cap), `partial` (some trigger off), `off` (every
 * trigger off), `paused`, `capped` (the day's cap reached).
 */
export interface TendView {
  state: 'on' | 'partial' | 'off' | 'paused' | 'capped';
  triggers: Record<AutomaticTendTrigger, boolean>;
  priority: number;
  /** `[tend] daily_cap`; null: no cap. */
  daily_cap: number | null;
  /** Automatic tends queued today (counted only when a cap is set; else null). */
  today: number | null;
  /** The day counted (`YYYY-MM-DD` in `[budget].timezone`) and that zone. */
  day: string;
  timezone: string;
  /** The pause: who and when; absent when tends are not paused. */
  paused?: { by: string; at: string };
  /** Why tend.json cannot be read (tends count as paused meanwhile). */
  problem?: string;
}

/**
 * The tend view in a few words, for the status line and the startup note:
 * `tends: paused`, `tends: off`, `tends: capped 5/5 today`,
 * `tends: run_failure off`; undefined when tends run as the seeds have them.
 */
export function tendWords(view: TendView | undefined): string | undefined {
  if (!view) return undefined;
  switch (view.state) {
    case 'on':
      return undefined;
    case 'off':
      return 'tends: off';
    case 'paused':
      return view.problem ? 'tends: paused (tend.json unreadable)' : 'tends: paused';
    case 'capped':
      return `tends: capped ${view.today}/${view.daily_cap} today`;
    case 'partial':
      return `tends: ${TEND_TRIGGERS.filter((t) => !view.triggers[t]).join(', ')} off`;
  }
}
