import type { RunRecord } from '../../contracts/index.js';
import { duration } from '../../format.js';
import type { RemoteView } from '../../snapshot/types.js';

/** One line of the run pane's runner block, with its tone (colour). */
export interface RemoteLine {
  text: string;
  tone: 'ok' | 'bad' | 'warn' | 'info';
}

/** `14:03:10` (UTC) of an ISO time. */
const clock = (iso: string) => iso.slice(11, 19);

/**
 * The runner block of the run pane for a remote run (docs/workbench/
 * level2.md, "Panes"): `runner NAME@HOST · heartbeat 12s ago · 40% ·
 * <status line>` while its lease is active (the age from the lease's
 * `renewed_at` to `now`, ms), `lease finished`/`lease expired HH:MM:SS`
 * after; an abandoned run's reason; the artifacts' names. Empty for a local run.
 */
export function remoteLines(run: RunRecord, remote: RemoteView | undefined, now: number): RemoteLine[] {
  if (!run.runner) return [];
  const view = remote?.runId === run.id ? remote : undefined;
  const lease = view?.lease;
  const who = `runner ${run.runner.name}@${run.runner.host}`;
  const lines: RemoteLine[] = [];
  if (lease?.state === 'active') {
    const ago = duration(Math.max(0, now - Date.parse(lease.renewed_at)) / 1000);
    const late = now > Date.parse(lease.expires_at);
    const parts = [who, `heartbeat ${ago} ago${late ? ' (lease past due)' : ''}`, ...(lease.progress !== undefined ? [`${Math.round(lease.progress)}%`] : []), ...(lease.status_line ? [lease.status_line] : [])];
    lines.push({ text: parts.join(' · '), tone: late ? 'warn' : 'info' });
  } else if (lease) {
    lines.push({ text: `${who} · lease ${lease.state}${lease.ended_at ? ` ${clock(lease.ended_at)}` : ''}`, tone: lease.state === 'expired' ? 'bad' : 'info' });
  } else {
    lines.push({ text: `${who} · lease ${run.runner.lease}`, tone: 'info' });
  }
  if (run.status === 'abandoned') {
    const why = run.failure_reason === 'lease_expired' ? `lease_expired: no heartbeat from ${run.runner.name} within its lease` : (run.failure_reason ?? 'no reason recorded');
    lines.push({ text: `abandoned · ${why}${run.outputs?.error ? ` — ${run.outputs.error}` : ''}`, tone: 'bad' });
  }
  const artifacts = view?.artifacts ?? [];
  if (artifacts.length) lines.push({ text: `artifacts ${artifacts.map((a) => (a.kind === 'link' ? `${a.name} (link)` : a.name)).join(' · ')}`, tone: 'ok' });
  return lines;
}
