import type { LandingRecord } from '../../contracts/index.js';
import { keyOf } from '../keymap.js';

/** One line of the run pane's landing block, with its tone (colour). */
export interface LandingLine {
  text: string;
  tone: 'ok' | 'bad' | 'warn' | 'review';
}

const TONES: Record<LandingRecord['state'], LandingLine['tone']> = {
  awaiting_review: 'review',
  queued: 'warn',
  verifying: 'warn',
  waiting: 'warn',
  landed: 'ok',
  conflict: 'bad',
  rejected: 'bad',
  failed: 'bad',
};

/** `3 files`, `1 file`. */
export function filesCount(n: number | undefined): string {
  return n === undefined ? 'files ?' : `${n} file${n === 1 ? '' : 's'}`;
}

/**
 * The landing block of the run pane (docs/workbench/level2.md, "Panes"):
 * `landing awaiting review · 3 files → main · d diff`, then what the landing
 * says (a waiting landing's way on, the conflicting paths, the review's
 * comment, where the base moved), in the landing's colour. Empty for a run
 * with no landing.
 */
export function landingLines(landing: LandingRecord | undefined, runId: string | undefined): LandingLine[] {
  if (!landing || landing.run !== runId) return [];
  const tone = TONES[landing.state];
  const state = landing.state.replace('_', ' ');
  const reason = landing.failure_reason && landing.state === 'failed' ? ` (${landing.failure_reason})` : '';
  const accepted = landing.review?.decision === 'accepted' && (landing.state === 'queued' || landing.state === 'verifying' || landing.state === 'waiting') ? ` · accepted by ${landing.review.by}` : '';
  const review = landing.state === 'awaiting_review' ? ` · ${keyOf('run.diff')} diff` : '';
  const lines: LandingLine[] = [{ text: `landing ${state}${reason} · ${filesCount(landing.files?.length)} → ${landing.base_branch}${accepted}${review}`, tone }];
  const said = landing.conflict?.paths.length && !landing.message ? `conflict in ${landing.conflict.paths.join(', ')}` : landing.message;
  if (said) lines.push({ text: said, tone });
  if (landing.state === 'failed' && landing.verify && !landing.verify.ok) lines.push({ text: `verify ${landing.verify.command}: ${landing.verify.timed_out ? 'timed out' : `exit ${landing.verify.exit_code ?? '?'}`}`, tone });
  return lines;
}
