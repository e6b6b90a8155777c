/**
 * `pak2 doctor`: checks a garden's files and processes and names every
 * problem with the file (and field) and the safe fix; `--fix` makes those
 * fixes and never deletes a record (docs/doctor/level2.md).
 */
import path from 'node:path';
import { storeUrlOf, type GardenPaths } from '../garden/index.js';
import { attachStore, detachStore, OpenGoalScanner, storeOf } from '../store/index.js';
import { PostgresStore } from '../store/postgres/store.js';
import { Aside } from './aside.js';
import { loadForDoctor } from './config.js';
import { checkDashboardInvocations } from './dashboard.js';
import { checkEvents } from './events.js';
import { checkGoals, checkLedger } from './goals.js';
import { checkTakers } from './takers.js';
import { checkIgnore } from './ignore.js';
import { checkLeases } from './leases.js';
import { checkLock } from './lock.js';
import { checkPlants } from './plants.js';
import { coordinatorPresence } from './presence.js';
import { checkProcesses } from './processes.js';
import { checkRuns } from './runs.js';
import { checkRuntimeGit } from './runtime-git.js';
import { checkSchedules } from './schedules.js';
import { checkStore } from './store.js';
import { checkWorktrees } from './worktrees.js';
import { CHECK_WORDS, DOCTOR_CHECKS, NotFixed, type CheckResult, type DoctorCheck, type DoctorContext, type Finding, type Problem } from './types.js';

export { CHECK_WORDS, DOCTOR_CHECKS, type CheckResult, type DoctorCheck, type Finding } from './types.js';
export { Aside, doctorDir } from './aside.js';
export { coordinatorPresence, gardenServeProcesses, type CoordinatorPresence, type ServeProcess } from './presence.js';
export { processAlive } from '../proc.js';
export { gardenAgentProcesses, type AgentProcess } from './processes.js';
export { scanEventLog, type EventLogScan } from './events.js';
export { plantFromEvents } from './plants.js';

/** What {@link runDoctor} is asked to do. */
export interface DoctorOptions {
  /** The garden directory, or (with `search`) where to start looking for one. */
  dir: string;
  /** Look for the nearest ancestor of `dir` holding PAK2.toml. */
  search?: boolean;
  /** Make the safe fixes. */
  fix?: boolean;
  /** The environment (git's PATH); default this process's. */
  env?: NodeJS.ProcessEnv;
  /** The clock, for the moved-aside directory's name. */
  now?: Date;
}

/** What doctor found (and, with `fix`, did). */
export interface DoctorReport {
  /** The garden root. */
  gardenRoot: string;
  /** Every finding, in check order. */
  findings: Finding[];
  /** Every check in order: whether it ran, and its findings' count (the text report lists each). */
  checks: CheckResult[];
  /** True when `fix` was asked for. */
  fixRan: boolean;
  /** `<runtime-root>/doctor/<timestamp>` when `--fix` moved or copied something there. */
  asideDir?: string;
}

function publicFinding(problem: Problem): Finding {
  const { repair: _repair, ...finding } = problem;
  return finding;
}

/**
 * Checks the garden at `options.dir`: PAK2.toml (stopping there when it
 * does not load), the coordinator lock, goal files, the closed ledger, run
 * records against their seals and running runs, remote runners' leases
 * (and goals their finish left unsettled), plants, schedules.json, the
 * dashboard invocation records, the event log,
 * orphan agent processes, the runtime git repository and whether git
 * ignores the runtime root. On a PostgreSQL garden the store check (its
 * schema version, stuck leases, orphaned runs) stands for the goal, ledger,
 * run, lease and event checks. With `fix`, makes
 * each finding's safe fix in that order and marks it `fixed`; a fix that
 * fails leaves `fixed: false` and says why in `fix`.
 *
 * @throws UserError when `dir` holds no garden.
 */
export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const loaded = loadForDoctor(options.dir, options.search ?? false);
  if ('problem' in loaded) {
    const finding = publicFinding(loaded.problem);
    const findings = [options.fix ? { ...finding, fixed: false } : finding];
    return { gardenRoot: loaded.root, findings, checks: checkResults(findings, { skipped: (check) => (check === 'config' ? undefined : 'not run: PAK2.toml does not load') }), fixRan: Boolean(options.fix) };
  }
  const { garden } = loaded;
  const ctx: DoctorContext = {
    garden,
    presence: await coordinatorPresence(garden.paths),
    aside: new Aside(garden.paths, options.now),
    env: options.env ?? process.env,
  };
  const problems: Problem[] = [];
  problems.push(...checkLock(ctx));
  const storeUrl = storeUrlOf(garden.config.storeUrl, ctx.env);
  // Which checks did not run here, and why: the report lists every check.
  let skipped: (check: DoctorCheck) => string | undefined = (check) => (check === 'store' ? 'not run: not a PostgreSQL garden (its records are checked as files)' : undefined);
  if (storeUrl) {
    // A PostgreSQL garden: its goals, runs, leases and events are the store's, checked there; the file checks of those records do not apply.
    const store = await checkStore(ctx, storeUrl.url, storeUrl.from);
    problems.push(...store.problems);
    skipped = (check) =>
      STORE_STANDS_FOR.includes(check) ? 'not run: the store check stands for it on PostgreSQL' : (check === 'worktrees' || check === 'dashboard') && !store.usable ? 'not run: the store does not open without a migration' : undefined;
    problems.push(...(await checkPlants(ctx)));
    problems.push(...(await checkSchedules(ctx)));
    problems.push(...checkProcesses(ctx));
    problems.push(...(await checkRuntimeGit(ctx)));
    problems.push(...(await checkIgnore(ctx)));
    // The worktrees check reads runs and goals through the store: only when it opens without a migration.
    if (store.usable) {
      // One attached already (doctor run in a process that uses the garden) is used as it is.
      const own = storeOf(garden.paths) ? undefined : new PostgresStore(storeUrl.url, { max: 2 });
      if (own) attachStore(garden.paths, own);
      try {
        problems.push(...checkTakers(ctx, (await new OpenGoalScanner(garden.paths).scan()).goals));
        problems.push(...(await checkDashboardInvocations(ctx)));
        problems.push(...(await checkWorktrees(ctx)));
      } finally {
        if (own) {
          detachStore(garden.paths);
          await own.close();
        }
      }
    }
  } else {
    const goals = await checkGoals(ctx);
    problems.push(...goals.problems);
    problems.push(...checkTakers(ctx, goals.scan.goals.values()));
    problems.push(...(await checkLedger(ctx, goals.scan)));
    problems.push(...(await checkRuns(ctx, goals.scan)));
    problems.push(...(await checkLeases(ctx, goals.scan)));
    problems.push(...(await checkPlants(ctx)));
    problems.push(...(await checkSchedules(ctx)));
    problems.push(...(await checkDashboardInvocations(ctx)));
    problems.push(...(await checkEvents(ctx)));
    problems.push(...checkProcesses(ctx));
    problems.push(...(await checkRuntimeGit(ctx)));
    problems.push(...(await checkIgnore(ctx)));
    problems.push(...(await checkWorktrees(ctx)));
  }

  if (!options.fix) {
    const findings = problems.map(publicFinding);
    return { gardenRoot: garden.paths.gardenRoot, findings, checks: checkResults(findings, { skipped }), fixRan: false };
  }

  const findings: Finding[] = [];
  for (const problem of problems) {
    const finding = publicFinding(problem);
    if (!problem.repair) {
      findings.push({ ...finding, fixed: false });
      continue;
    }
    try {
      findings.push({ ...finding, fix: await problem.repair(ctx), fixed: true });
    } catch (error) {
      const why = error instanceof NotFixed ? error.message : `failed: ${(error as Error)?.message ?? String(error)}`;
      findings.push({ ...finding, fix: `${finding.fix} — not done: ${why}`, fixed: false });
    }
  }
  const report: DoctorReport = { gardenRoot: garden.paths.gardenRoot, findings, checks: checkResults(findings, { skipped }), fixRan: true };
  if (ctx.aside.touched) {
    report.asideDir = ctx.aside.dir;
    await ctx.aside.writeReport({ garden: garden.paths.gardenRoot, findings });
  }
  return report;
}

/** The file checks a PostgreSQL garden's store check stands for (docs/doctor/level2.md, "store"). */
const STORE_STANDS_FOR: readonly DoctorCheck[] = ['goals', 'ledger', 'runs', 'leases', 'events'];

/** Every check in order, with its findings' count, and `skipped` saying why one did not run. */
function checkResults(findings: readonly Finding[], options: { skipped: (check: DoctorCheck) => string | undefined }): CheckResult[] {
  return DOCTOR_CHECKS.map((check) => {
    const why = options.skipped(check);
    return { check, ran: why === undefined, ...(why ? { skipped: why } : {}), findings: findings.filter((f) => f.check === check).length };
  });
}

/** True when the report leaves something to do: any finding without `--fix`, any unfixed one after it. */
export function doctorFailed(report: DoctorReport): boolean {
  return report.findings.some((f) => f.fixed !== true);
}

/** A path for a person: relative to the garden root when inside it; anything but an absolute path (a store's record) as it is. */
export function displayPath(paths: Pick<GardenPaths, 'gardenRoot'> | string, file: string): string {
  // A store's record is named by its (redacted) URL, not a path.
  if (!path.isAbsolute(file)) return file;
  const root = typeof paths === 'string' ? paths : paths.gardenRoot;
  const rel = path.relative(root, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

/**
 * One line for one finding: `<check>: <file>[: <field>]: <message>` (the
 * field left out when the message begins with it), then
 * `— fix: …` (what `--fix` would do), `— fixed: …` or `— not fixed: …`.
 * Paths inside the garden are shown relative to its root.
 */
export function formatFinding(gardenRoot: string, finding: Finding): string {
  const show = (text: string) => text.split(gardenRoot + path.sep).join('');
  // A message that begins with its field (`status: INVALID_STATUS …`, `id "9-x" does not match …`) names it already.
  const named = finding.field !== undefined && (finding.message.startsWith(`${finding.field}: `) || finding.message.startsWith(`${finding.field} `));
  const head = `${finding.check}: ${displayPath(gardenRoot, finding.file)}${finding.field && !named ? `: ${finding.field}` : ''}: ${show(finding.message)}`;
  if (finding.fixed === true) return `${head} — fixed: ${show(finding.fix ?? '')}`;
  if (finding.fixed === false) return `${head} — not fixed${finding.fix ? `: ${show(finding.fix)}` : ' (no automatic fix)'}`;
  return finding.fix ? `${head} — fix: ${show(finding.fix)}` : head;
}

/** The mark of a check's line: ran clean (or all fixed), findings left, not run. */
const MARK = { ok: '[✓]', bad: '[✗]', skipped: '[-]' } as const;

/**
 * The report as lines, as `flutter doctor` lists what it checked
 * (docs/doctor/level2.md): `doctor: <garden>`, then each check in order on a
 * line of its own, `[✓] runs   <what it looks at>` when it found nothing,
 * `[✗] runs   2 problem(s): …` with its findings below it, indented (after
 * `--fix`: how many were fixed; `[✓]` when all were), `[-] store   not run:
 * <why>`; last a summary (`no problems found in …` when clean).
 */
export function formatReport(report: DoctorReport): string[] {
  const width = Math.max(...DOCTOR_CHECKS.map((c) => c.length));
  const lines = [`doctor: ${report.gardenRoot}`];
  for (const result of report.checks) {
    const name = result.check.padEnd(width);
    if (!result.ran) {
      lines.push(`${MARK.skipped} ${name}  ${result.skipped ?? 'not run'}`);
      continue;
    }
    const own = report.findings.filter((f) => f.check === result.check);
    if (own.length === 0) {
      lines.push(`${MARK.ok} ${name}  ${CHECK_WORDS[result.check]}`);
      continue;
    }
    const fixed = own.filter((f) => f.fixed === true).length;
    const counted = `${own.length} problem(s)${report.fixRan ? `, ${fixed} fixed` : ''}`;
    lines.push(`${fixed === own.length ? MARK.ok : MARK.bad} ${name}  ${counted}: ${CHECK_WORDS[result.check]}`);
    for (const finding of own) lines.push(`    ${formatFinding(report.gardenRoot, finding)}`);
  }
  // A finding of a check this list does not name (none today) is still printed.
  for (const finding of report.findings.filter((f) => !report.checks.some((c) => c.check === f.check))) lines.push(`    ${formatFinding(report.gardenRoot, finding)}`);
  const total = report.findings.length;
  if (total === 0) {
    lines.push(`no problems found in ${report.gardenRoot}`);
    return lines;
  }
  if (report.fixRan) {
    const fixed = report.findings.filter((f) => f.fixed).length;
    lines.push(`${total} problem(s): ${fixed} fixed, ${total - fixed} remain${report.asideDir ? `; moved-aside files are in ${displayPath(report.gardenRoot, report.asideDir)}` : ''}`);
  } else {
    const fixable = report.findings.filter((f) => f.fix).length;
    lines.push(`${total} problem(s)${fixable ? `; pak2 doctor --fix makes the ${fixable} safe fix(es) (it never deletes a record)` : '; none has an automatic fix'}`);
  }
  return lines;
}
