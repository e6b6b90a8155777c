import fs from 'node:fs';
import path from 'node:path';
import { render, renderToString } from 'ink';
import React from 'react';
import { Coordinator } from '../coordinator/index.js';
import { runDir, type Garden } from '../garden/index.js';
import { historyNotice, setRuntimeHistoryListener } from '../history/index.js';
import { markNoteRead } from '../store/index.js';
import { SnapshotSource } from '../snapshot/index.js';
import { sendOperatorMessage, submitGoal } from '../submit/index.js';
import { App, type WorkbenchActions } from './app.js';

/** Options of {@link runWorkbench}. */
export interface WorkbenchOptions {
  /** The read-only dashboard: no coordinator, no writes. */
  readOnly?: boolean;
  /** Label for the coordinator lock holder. */
  command?: string;
}

/**
 * Opens the full-screen workbench on a garden and resolves when the operator
 * quits. With a coordinator (the default) it runs the garden in-process;
 * agent stderr goes to `<run-dir>/stderr.log`, since it would tear the frame,
 * and so does the runtime-history line of a close that did not commit.
 * One quit path: stop the coordinator (live runs are killed and closed
 * `killed` / coordinator_stopped), stop the snapshot source, unmount.
 *
 * @throws UserError when another coordinator holds the garden.
 */
export async function runWorkbench(garden: Garden, options: WorkbenchOptions = {}): Promise<void> {
  const appendRunStderr = (runId: string, text: string) => {
    try {
      fs.appendFileSync(path.join(runDir(garden.paths, runId), 'stderr.log'), text);
    } catch {
      // the run directory is gone: nothing to keep
    }
  };
  const coordinator = options.readOnly
    ? undefined
    : new Coordinator({
        garden,
        command: options.command ?? 'pak2 (workbench)',
        startup: true,
        // The agent's stderr is the run's stderr.log itself; the terminal belongs to Ink.
        onStderr: () => undefined,
      });
  const restoreHistoryListener = options.readOnly
    ? () => undefined
    : setRuntimeHistoryListener((runId, result) => {
        const line = historyNotice(runId, result);
        if (line) appendRunStderr(runId, `${line}\n`);
      });
  try {
    await coordinator?.start();
  } catch (error) {
    restoreHistoryListener();
    throw error;
  }
  const source = new SnapshotSource({ garden, ...(coordinator ? { coordinator } : {}), readOnly: !!options.readOnly });
  await source.start();

  let quitting: Promise<void> | undefined;
  let unmount: () => void = () => undefined;
  const quit = () => {
    quitting ??= (async () => {
      await coordinator?.stop();
      await source.stop();
      unmount();
    })();
  };
  const actions: WorkbenchActions = {
    follow: (runId) => source.follow(runId),
    quit,
    ...(options.readOnly
      ? {}
      : {
          submitGoal: (input) => submitGoal(garden, input),
          sendMessage: (text) => sendOperatorMessage(garden, text),
          markNoteRead: (name) => markNoteRead(garden.paths, garden.config, name),
        }),
  };
  const instance = render(<App store={source} actions={actions} />, { stdout: keepScrollback(process.stdout), exitOnCtrlC: false, patchConsole: false });
  unmount = () => instance.unmount();
  const onSignal = () => quit();
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  try {
    await instance.waitUntilExit();
    await quitting;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
    restoreHistoryListener();
  }
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
