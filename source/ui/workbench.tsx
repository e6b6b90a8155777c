import { render, renderToString } from 'ink';
import React from 'react';
import type { Garden } from '../garden/index.js';
import { SnapshotSource } from '../snapshot/index.js';
import { Session, terminalNotification, watchAttention } from '../session/index.js';
import { App, type WorkbenchActions } from './app.js';

/** Options of {@link runWorkbench}. */
export interface WorkbenchOptions {
  /** The read-only dashboard: no coordinator, no writes. */
  readOnly?: boolean;
  /** Label for the coordinator lock holder. */
  command?: string;
  /** Started on the open session (`cycle --serve`: the HTTP server); the stop it returns runs before the session's. */
  attach?: (session: Session) => Promise<() => Promise<void>>;
}

/**
 * Opens the full-screen workbench on a garden and resolves when the operator
 * quits. With a coordinator (the default) it runs the garden in-process, or,
 * when another process's coordinator holds the garden, attaches to it (the
 * actions work through it; quitting leaves it running);
 * agent stderr goes to `<run-dir>/stderr.log`, since it would tear the frame,
 * and so does the runtime-history line of a close that did not commit.
 * One quit path: stop the coordinator (live runs are killed and closed
 * `killed` / coordinator_stopped), stop the snapshot source, unmount.
 *
 * @throws UserError when another coordinator holds the garden and cannot be attached to (it is on another host).
 */
export async function runWorkbench(garden: Garden, options: WorkbenchOptions = {}): Promise<void> {
  const session = new Session({
    garden,
    command: options.command ?? 'pak2 (workbench)',
    readOnly: Boolean(options.readOnly),
    // Another process's coordinator (`pak2 cycle --no-ui` on a server) runs the garden: attach to it (docs/workbench/level2.md, "Attached").
    attach: !options.readOnly,
    // The agent's stderr is the run's stderr.log itself, and so are pak2's notices about the run: the terminal belongs to Ink.
    onStderr: () => undefined,
    noticesToRunLog: true,
  });
  let detach: (() => Promise<void>) | undefined;
  try {
    await session.open();
    detach = await options.attach?.(session);
  } catch (error) {
    await session.close();
    throw error;
  }
  const source = session.source!;
  let unmount: () => void = () => undefined;
  let quitting: Promise<void> | undefined;
  // The one quit path: the session's stop, then unmount.
  const quit = () => {
    quitting ??= Promise.resolve(attention?.stop())
      .catch(() => undefined)
      .then(() => detach?.())
      .catch(() => undefined)
      .then(() => session.close())
      .then(() => unmount());
  };
  const actions: WorkbenchActions = {
    follow: (runId) => source.follow(runId),
    quit,
    // The dashboard reads diffs too: a read, nothing written.
    runDiff: session.reads.runDiff,
    ...(session.actions
      ? {
          submitGoal: session.actions.submitGoal,
          sendMessage: session.actions.sendMessage,
          markNoteRead: session.actions.markNoteRead,
          cancelGoal: session.actions.cancelGoal,
          stopRun: session.actions.stopRun,
          addSupplement: session.actions.addSupplement,
          retryGoal: (goalId) => session.actions!.retryGoal(goalId),
          answerQuestion: session.actions.answerQuestion,
          runDiff: session.actions.runDiff,
          landRun: (runId) => session.actions!.landRun(runId),
          rejectRun: (runId, options) => session.actions!.rejectRun(runId, options),
          postComment: session.actions.postComment,
          ackAttention: (ids) => session.actions!.ackAttention(ids),
          setTendsPaused: (paused) => session.actions!.setTendsPaused(paused),
          takeOver: () => session.takeOver(),
        }
      : {}),
  };
  const instance = render(<App store={source} actions={actions} />, { stdout: keepScrollback(process.stdout), exitOnCtrlC: false, patchConsole: false });
  unmount = () => instance.unmount();
  // New "needs you" items ring the terminal (docs/attention/level2.md, "Notifications"): the sequences move no
  // cursor, and Ink writes each frame whole, so one written between frames leaves the frame as it is.
  const attention = options.readOnly
    ? undefined
    : watchAttention(garden, {
        snapshots: source,
        onItem: (item) => {
          // [notify] terminal as PAK2.toml says now (it is live: docs/garden/level2.md).
          const bytes = terminalNotification(garden.config.notify?.terminal ?? 'bell', item);
          if (bytes && process.stdout.writable && !process.stdout.destroyed) process.stdout.write(bytes);
        },
        onProblem: (line) => source.reportProblem(line),
      });
  const unhandle = session.handleSignals(() => quit());
  // Pasted text arrives bracketed, so its line breaks are text, not enter (the input hook reads the brackets).
  bracketedPaste(process.stdout, true);
  try {
    await instance.waitUntilExit();
    await quitting;
  } finally {
    bracketedPaste(process.stdout, false);
    unhandle();
  }
}

/** Turns the terminal's bracketed paste mode on or off; nothing when the terminal is gone (its errors are the CLI's to ignore). */
function bracketedPaste(stream: NodeJS.WriteStream, on: boolean): void {
  if (stream.isTTY && stream.writable && !stream.destroyed) stream.write(on ? '\x1b[?2004h' : '\x1b[?2004l');
}

/** Erase Scrollback (ED 3): part of the clear Ink sends when the last frame was as high as the terminal. */
const ERASE_SCROLLBACK = '\x1b[3J';

/**
 * The terminal stream for Ink, without Erase Scrollback. The frame stays
 * below the terminal's height, but after the terminal shrinks the last frame
 * (drawn for the old height) is as high as the new one, and Ink clears the
 * terminal once, scrollback included: the screen is still redrawn, the
 * operator's scrollback stays.
 */
export function keepScrollback(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    const data = typeof chunk === 'string' && chunk.includes(ERASE_SCROLLBACK) ? chunk.replaceAll(ERASE_SCROLLBACK, '') : chunk;
    return (stream.write as (...args: unknown[]) => boolean)(data, ...rest);
  };
  return new Proxy(stream, {
    get(target, key) {
      if (key === 'write') return write;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * One frame of the read-only panes as text, for a dashboard whose stdout is
 * not a terminal (a pipe, a log): the snapshot at this moment, rendered once.
 */
export async function renderDashboardFrame(garden: Garden, size: { columns: number; rows: number }): Promise<string> {
  const source = new SnapshotSource({ garden, readOnly: true });
  await source.start();
  await source.stop();
  const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined };
  return renderToString(<App store={source} actions={actions} size={size} interactive={false} />, { columns: size.columns });
}
