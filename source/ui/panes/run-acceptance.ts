import type { RunRecord } from '../../contracts/index.js';
import { acceptanceMark, acceptanceSummary } from '../../format.js';

/** One line of the run pane's acceptance block, with its tone (colour). */
export interface AcceptanceLine {
  text: string;
  tone: 'ok' | 'bad' | 'warn';
}

/**
 * The acceptance block of the run pane (docs/workbench/level2.md, "Panes"):
 * for a run of a goal with acceptance criteria (docs/goal/level2.md),
 * `acceptance 1 of 3 criteria verified, 1 failed`, then one line per
 * criterion: `✓`/`✗`/`?`, its text and the evidence. Green when every one
 * was verified, red when one failed, yellow when one is not verified. Empty
 * for a run without criteria (or still running: they are checked at its end).
 */
export function acceptanceLines(run: RunRecord): AcceptanceLine[] {
  const summary = acceptanceSummary(run.acceptance);
  if (!summary) return [];
  const criteria = (run.acceptance ?? []).filter((a) => a.criterion);
  const toneOf = (a: (typeof criteria)[number]): AcceptanceLine['tone'] => (a.verified ? 'ok' : a.result === 'unverified' ? 'warn' : 'bad');
  const tones = criteria.map(toneOf);
  const overall: AcceptanceLine['tone'] = tones.includes('bad') ? 'bad' : tones.includes('warn') ? 'warn' : 'ok';
  return [{ text: `acceptance ${summary}`, tone: overall }, ...criteria.map((a) => ({ text: `${acceptanceMark(a)} ${a.item}${a.evidence ? ` — ${a.evidence}` : ''}`, tone: toneOf(a) }))];
}
