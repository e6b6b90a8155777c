import fs from 'node:fs';
import path from 'node:path';
import { RUN_MARK_ENV } from '../driver/process-tree.js';
import { commandOf } from '../proc.js';
import { processAlive } from '../proc.js';
import { coordinatorPresence } from './presence.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** An agent process of a garden, found by its environment. */
export interface AgentProcess {
  pid: number;
  mark: string;
  runId?: string;
  runDir?: string;
  command: string;
}

/** This process and its ancestors: never reported, never signalled (doctor may run inside an agent). */
function selfAndAncestors(): Set<number> {
  const pids = new Set<number>([process.pid]);
  let pid = process.ppid;
  for (let depth = 0; pid > 1 && depth < 64 && !pids.has(pid); depth += 1) {
    pids.add(pid);
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      break;
    }
  }
  return pids;
}

/**
 * Live processes whose environment names this garden (`PAK2_GARDEN=<garden
 * root>`, the path or its real path) and carries a run mark
 * (`PAK2_RUN_MARK`): every agent process pak2 launched here, and their
 * children. Linux `/proc/<pid>/environ`; elsewhere none. Never this process
 * or its ancestors.
 */
export function gardenAgentProcesses(gardenRoot: string): AgentProcess[] {
  const roots = new Set([gardenRoot]);
  try {
    roots.add(fs.realpathSync(gardenRoot));
  } catch {
    // the resolved path is all there is
  }
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const skip = selfAndAncestors();
  const found: AgentProcess[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name) || skip.has(Number(name))) continue;
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue;
    }
    if (!environ.includes('PAK2_GARDEN=') || !environ.includes(`${RUN_MARK_ENV}=`)) continue;
    const env = new Map<string, string>();
    for (const entry of environ.split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
    }
    const mark = env.get(RUN_MARK_ENV);
    if (!mark || !roots.has(env.get('PAK2_GARDEN') ?? '')) continue;
    const pid = Number(name);
    if (!processAlive(pid)) continue;
    found.push({
      pid,
      mark,
      ...(env.get('PAK2_RUN_ID') ? { runId: env.get('PAK2_RUN_ID')! } : {}),
      ...(env.get('PAK2_RUN_DIR') ? { runDir: env.get('PAK2_RUN_DIR')! } : {}),
      command: commandOf(pid),
    });
  }
  return found.sort((a, b) => a.pid - b.pid);
}

/**
 * Orphan agent processes: while no coordinator holds the garden, every live
 * agent process of it ({@link gardenAgentProcesses}) belongs to a run nobody
 * watches. One finding per run mark. Fix: SIGKILL them (checked again just
 * before: still no coordinator, still the same mark), then wait up to 2 s
 * for them to go.
 */
export function checkProcesses(ctx: DoctorContext): Problem[] {
  if (ctx.presence.held) return [];
  const { paths } = ctx.garden;
  const byMark = new Map<string, AgentProcess[]>();
  for (const p of gardenAgentProcesses(paths.gardenRoot)) byMark.set(p.mark, [...(byMark.get(p.mark) ?? []), p]);
  const problems: Problem[] = [];
  for (const [mark, procs] of byMark) {
    const first = procs[0]!;
    const run = first.runId ?? 'an unknown run';
    const file = first.runDir ? path.join(first.runDir, 'process.json') : `/proc/${first.pid}/environ`;
    problems.push({
      check: 'processes',
      file,
      message: `${procs.length} agent process(es) of ${run} still alive with no coordinator holding the garden: ${procs.map((p) => `pid ${p.pid} (${p.command.slice(0, 80)})`).join(', ')}`,
      fix: `SIGKILL ${procs.length === 1 ? 'it' : 'them'}`,
      repair: async (c) => {
        const again = await coordinatorPresence(c.garden.paths);
        if (again.held) throw new NotFixed(`a coordinator holds the garden now: ${again.heldBy}`);
        const targets = gardenAgentProcesses(paths.gardenRoot).filter((p) => p.mark === mark);
        for (const p of targets) {
          try {
            process.kill(p.pid, 'SIGKILL');
          } catch {
            // gone already, or not ours to signal: reported below if it stays
          }
        }
        const until = Date.now() + 2000;
        let left = targets.filter((p) => processAlive(p.pid));
        while (left.length > 0 && Date.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, 25));
          left = left.filter((p) => processAlive(p.pid));
        }
        if (left.length > 0) throw new NotFixed(`still alive after SIGKILL: ${left.map((p) => `pid ${p.pid}`).join(', ')}`);
        return `killed ${targets.map((p) => `pid ${p.pid}`).join(', ') || 'nothing (they had exited)'}`;
      },
    });
  }
  return problems;
}
