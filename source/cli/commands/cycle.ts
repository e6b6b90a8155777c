import type { Command } from 'commander';
import { describeConfigStatus, type Garden } from '../../garden/index.js';
import { UserError } from '../../errors.js';
import { Session } from '../../session/index.js';
import { gardenOf } from '../context.js';
import { formatEventLine, StderrForward } from '../headless.js';
import type { CliIO } from '../main.js';

interface CycleOptions {
  ui: boolean;
  untilIdle?: boolean;
  json?: boolean;
  /** `--serve [--host H] [--port P]`: the HTTP server on this session (source/cli/commands/serve.ts). */
  serve?: boolean;
  host?: string;
  port?: string;
}

/**
 * Why this start runs headless (the one-line notice), or `''` when the
 * workbench can open: `--no-ui`, `CI` set, stdin or stdout not a terminal,
 * or `--until-idle` / `--json` (made for scripts).
 */
export function headlessReason(opts: CycleOptions, io: CliIO): string | undefined {
  if (!opts.ui) return 'running headless (--no-ui)';
  if (io.env.CI) return 'CI is set: running headless';
  if (!io.isTTY) return 'not a terminal: running headless';
  if (opts.untilIdle || opts.json) return 'running headless (--until-idle and --json are for scripts)';
  return '';
}

/**
 * Runs the garden's session headless: one line (or JSON object) per event in
 * the garden's log, whoever wrote it, problems said once each, and the
 * agents' stderr on stderr, sanitized a whole line at a time
 * ({@link StderrForward}; docs/run/level2.md, "Printed text").
 */
export async function runHeadless(garden: Garden, opts: CycleOptions, io: CliIO): Promise<void> {
  // Each distinct problem is said once, not on every pass.
  const said = new Set<string>();
  const sayOnce = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    io.err(line);
  };
  // Agents' stderr, sanitized (the workbench drops it; stderr.log keeps it raw either way).
  const stderr = new StderrForward((text) => io.err(text));
  const session = new Session({
    garden,
    command: 'pak2 cycle --no-ui',
    snapshot: false,
    onStderr: (runId, chunk) => stderr.push(runId, chunk),
    onError: (error) => sayOnce(`pak2: ${error.message}`),
    // Each change of PAK2.toml is said as it comes (a bad edit, fixed, then the same bad edit again is said twice).
    onConfig: (status) => {
      for (const line of describeConfigStatus(status)) io.err(`pak2: ${line}`);
    },
    onPass: (summary) => {
      for (const problem of summary.problems) sayOnce(`pak2: skipped ${problem.message}`);
      for (const rolled of summary.rolledBack) sayOnce(`pak2: goal ${rolled.goal} stays queued: ${rolled.reason}`);
    },
  });
  const unsubscribe = session.onEvent((event) => io.out(formatEventLine(event, opts.json)));
  let signals = 0;
  const unhandle = session.handleSignals((count, live) => {
    signals = count;
    if (live > 0) {
      io.err(
        count === 1
          ? `pak2: stopping: ${live} live run(s) are being stopped and closed killed (coordinator_stopped); their goals go back to the queue`
          : 'pak2: still stopping: waiting for the live runs to exit',
      );
    }
  });
  const coordinator = session.coordinator!;
  const stopped = new Promise<void>((resolve) => coordinator.on('state', (state) => (state === 'stopping' || state === 'stopped') && resolve()));
  let server: { close(): Promise<void> } | undefined;
  // New "needs you" items run the [notify] command (docs/attention/level2.md); what is there at start is not notified.
  const { watchAttention } = await import('../../session/index.js');
  const attention = watchAttention(garden, { onProblem: (line) => sayOnce(`pak2: ${line}`) });
  await attention.ready;
  let webhooks: { stop(): Promise<void> } | undefined;
  try {
    await session.open();
    // Webhooks are delivered whenever a coordinator runs, not only under serve (which runs its own worker).
    if (!opts.serve) webhooks = (await import('../../server/webhooks/delivery.js')).startWebhookDelivery(garden, { onNotice: (line) => sayOnce(`pak2: ${line}`) });
    if (opts.serve) {
      const { startServe } = await import('./serve.js');
      server = await startServe(garden, session.actions!, opts, io, { onStatus: (view) => session.setServerStatus(view), onNotice: sayOnce });
    }
    await (opts.untilIdle ? Promise.race([coordinator.untilIdle(), stopped]) : stopped);
    if (opts.untilIdle) await attention.flush();
    const last = coordinator.summary;
    if (opts.untilIdle && last && signals === 0) {
      const stuck = [...last.skipped.map((goal) => `${goal} (no plant assigned)`), ...last.blocked.map((r) => `${r.goal} (${r.reason})`), ...last.rolledBack.map((r) => `${r.goal} (${r.reason})`), ...last.ioHeld.map((r) => `${r.goal} (${r.reason})`), ...last.waiting.map((w) => `${w.goal} (waits for ${w.waiting_for.join(', ')})`)];
      if (stuck.length) io.err(`pak2: idle; ${stuck.length} goal(s) stay queued and cannot dispatch: ${stuck.join('; ')}`);
      // Work an I/O fault held back (a full disk; each fault was said in one line): the script is told it did not all get done.
      if (!coordinator.faults.empty) io.exitCode = 1;
    }
  } finally {
    await server?.close();
    await webhooks?.stop();
    await session.close();
    await attention.stop();
    stderr.end();
    unhandle();
    unsubscribe();
  }
}

/**
 * The workbench's webhook delivery (docs/server/level2.md, "Webhooks"): the
 * worker runs in the workbench's process once the garden has subscriptions;
 * its notices go to the problems list, except that another process of the
 * garden delivers them (a `pak2 serve` beside it): that is how it should be.
 */
function deliverWebhooks(garden: Garden) {
  return async (session: { source?: { reportProblem(line: string): void } | undefined }): Promise<() => Promise<void>> => {
    const { startWebhookDelivery } = await import('../../server/webhooks/delivery.js');
    const delivery = startWebhookDelivery(garden, { onNotice: (line) => !line.startsWith('webhooks: another pak2 process') && session.source?.reportProblem(line) });
    return () => delivery.stop();
  };
}

/** `pak2 cycle` (and bare `pak2`): the workbench in a terminal, else headless. */
export async function runCycle(command: Command, opts: CycleOptions, io: CliIO): Promise<void> {
  const garden = gardenOf(command, io);
  if (!opts.serve && (opts.host !== undefined || opts.port !== undefined)) throw new UserError(`${opts.host !== undefined ? '--host' : '--port'}: only with --serve`);
  const reason = headlessReason(opts, io);
  if (reason === '') {
    // Ink and React load only on the interactive path, so headless starts fast.
    const { runWorkbench } = await import('../../ui/workbench.js');
    return runWorkbench(garden, { attach: opts.serve ? (await import('./serve.js')).serveForWorkbench(garden, opts, io) : deliverWebhooks(garden) });
  }
  if (reason) io.err(`pak2: ${reason}`);
  return runHeadless(garden, opts, io);
}

/**
 * `pak2 cycle`: runs the coordinator. In a terminal it opens the workbench;
 * headless (`--no-ui`, or no terminal) prints one line per lifecycle event
 * (JSON with `--json`); `--until-idle` exits once nothing is queued or
 * running, with status 1 when an I/O fault (a full disk) held work back. SIGINT / SIGTERM stop it cleanly: live runs are killed and closed
 * `killed` (coordinator_stopped).
 */
export function registerCycle(program: Command, io: CliIO): void {
  program
    .command('cycle')
    .description('run the coordinator: the workbench in a terminal, else headless lines')
    .option('--no-ui', 'run headless: print one line per lifecycle event')
    .option('--until-idle', 'exit once nothing is queued or running (headless)')
    .option('--json', 'headless lines as JSON events')
    .option('--serve', 'also serve the garden over HTTP on this session (as pak2 serve)')
    .option('--host <host>', 'with --serve: listen address (default 127.0.0.1)')
    .option('--port <port>', 'with --serve: port (default 7717; 0 picks a free one)')
    .action((opts: CycleOptions, command: Command) => runCycle(command, opts, io));

  program
    .command('dashboard')
    .description('the workbench panes, read-only: no coordinator, no writes (one frame when not a terminal)')
    .action(async (_opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const { startDashboardInvocation } = await import('../../lifecycle/dashboard-invocations.js');
      const finish = await startDashboardInvocation(garden.paths);
      const { runWorkbench, renderDashboardFrame } = await import('../../ui/workbench.js');
      if (io.isTTY) await runWorkbench(garden, { readOnly: true });
      else {
        io.err('pak2: not a terminal: printing one frame of the dashboard');
        io.out(await renderDashboardFrame(garden, { columns: Number(io.env.COLUMNS) || 120, rows: Number(io.env.LINES) || 40 }));
      }
      await finish();
    });
}
