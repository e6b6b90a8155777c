import { execa } from 'execa';
import type { AttentionItem } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { AttentionReader, type Snapshot } from '../snapshot/index.js';

/** How long a `[notify] command` may run for one item, ms. */
export const NOTIFY_COMMAND_TIMEOUT_MS = 10_000;

/** Options of {@link AttentionNotifier}. */
export interface AttentionNotifierOptions {
  /** `[notify] command`: argv run once per new item, the item as JSON (one line) on stdin; a function is asked per item (the command as PAK2.toml says now). */
  command?: readonly string[] | (() => readonly string[] | undefined);
  /** Where the command runs: the garden root. */
  cwd: string;
  /** Default {@link NOTIFY_COMMAND_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Told of each new item, in order (the workbench writes its bell / OSC sequence here). */
  onItem?: (item: AttentionItem) => void;
  /** One line, said once per process: the command failed (later failures are not repeated). */
  onProblem: (line: string) => void;
}

/**
 * Tells the operator of new "needs you" items (docs/attention/level2.md,
 * "Notifications"). {@link observe} is given the list each time it is read;
 * the first list only primes it (what was there at start is not notified
 * again), later an id not in the list before is new: `onItem` is called and
 * the `[notify] command` run with the item on stdin, one at a time in order.
 * A command that fails, times out or cannot start is said once and never
 * stops the caller's loop.
 */
export class AttentionNotifier {
  private seen: Set<string> | undefined;
  private queue: Promise<void> = Promise.resolve();
  private failed = false;

  constructor(private readonly options: AttentionNotifierOptions) {}

  /** Takes the current (unacknowledged) items; returns the new ones, which it notifies. */
  observe(items: readonly AttentionItem[]): AttentionItem[] {
    const first = this.seen === undefined;
    const before = this.seen ?? new Set<string>();
    // Only the ids listed now are remembered: the set is as small as the list.
    this.seen = new Set(items.map((item) => item.id));
    if (first) return [];
    const fresh = items.filter((item) => !before.has(item.id)).reverse(); // oldest new item first
    for (const item of fresh) {
      try {
        this.options.onItem?.(item);
      } catch {
        // a terminal that went away: nothing to tell
      }
      const command = typeof this.options.command === 'function' ? this.options.command() : this.options.command;
      if (command?.length) this.queue = this.queue.then(() => this.run(item, command));
    }
    return fresh;
  }

  /** Resolves when every command started so far has ended. */
  idle(): Promise<void> {
    return this.queue;
  }

  private async run(item: AttentionItem, command: readonly string[]): Promise<void> {
    const [file, ...args] = command;
    try {
      const result = await execa(file!, args, {
        cwd: this.options.cwd,
        input: `${JSON.stringify(item)}\n`,
        timeout: this.options.timeoutMs ?? NOTIFY_COMMAND_TIMEOUT_MS,
        reject: false,
        stdout: 'ignore',
        stderr: 'pipe',
        stripFinalNewline: true,
        maxBuffer: 64 * 1024,
      });
      if (result.failed) {
        // One line: execa's message for a command that cannot start runs over two.
        const why = result.timedOut ? `ran past ${Math.round((this.options.timeoutMs ?? NOTIFY_COMMAND_TIMEOUT_MS) / 1000)} s` : result.exitCode !== undefined ? `exited ${result.exitCode}` : (result.shortMessage ?? 'failed').split('\n')[0]!.replace(/^Command failed with /, 'could not start: ');
        const said = typeof result.stderr === 'string' && result.stderr ? `: ${result.stderr.split('\n')[0]}` : '';
        this.problem(`[notify] command ${JSON.stringify(file)} ${why}${said} (for ${item.id})`);
      }
    } catch (error) {
      this.problem(`[notify] command ${JSON.stringify(file)} failed: ${(error as Error).message.split('\n')[0]} (for ${item.id})`);
    }
  }

  private problem(line: string): void {
    if (this.failed) return;
    this.failed = true;
    this.options.onProblem(line);
  }
}

/** `ESC ] … BEL` text must hold no control characters (they would end or break the sequence). */
function oscText(text: string): string {
  return text.replace(/[\x00-\x1f\x7f-\x9f;]/g, ' ').slice(0, 200);
}

/**
 * The bytes the workbench writes for a new item under `[notify] terminal`
 * (docs/attention/level2.md, "Notifications"): `bell` BEL; `osc9`
 * `ESC ] 9 ; text BEL`; `osc777` `ESC ] 777 ; notify ; title ; body BEL`;
 * `all` the three; `off` nothing. None moves the cursor, so the frame stays.
 */
export function terminalNotification(mode: string, item: AttentionItem): string {
  const bell = '\x07';
  const osc9 = `\x1b]9;pak2: ${oscText(item.summary)}\x07`;
  const osc777 = `\x1b]777;notify;pak2 needs you;${oscText(item.summary)}\x07`;
  switch (mode) {
    case 'bell':
      return bell;
    case 'osc9':
      return osc9;
    case 'osc777':
      return osc777;
    case 'all':
      return `${bell}${osc9}${osc777}`;
    default:
      return '';
  }
}

/** A running {@link watchAttention}. */
export interface AttentionWatch {
  notifier: AttentionNotifier;
  /** Resolves once the first list is read (what is there at start is not notified). */
  ready: Promise<void>;
  /** Reads the list once more now and notifies what is new (a headless `--until-idle` before it exits). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** Options of {@link watchAttention}. */
export interface AttentionWatchOptions {
  /** The workbench's snapshot source: its snapshots carry the list. Absent: the list is polled (headless). */
  snapshots?: { getSnapshot(): Snapshot; subscribe(listener: () => void): () => void };
  /** How often the list is read when polled, ms. Default 1000. */
  pollMs?: number;
  onItem?: (item: AttentionItem) => void;
  onProblem: (line: string) => void;
}

/**
 * Watches the garden's "needs you" list for as long as a coordinator runs
 * (the workbench, `pak2 cycle`, `pak2 serve`) and notifies new items through
 * an {@link AttentionNotifier} with the garden's `[notify] command`.
 *
 * @returns the stop, which waits for commands under way (each within its timeout).
 */
export function watchAttention(garden: Garden, options: AttentionWatchOptions): AttentionWatch {
  const notifier = new AttentionNotifier({
    // Read per item: a [notify] command added to PAK2.toml while pak2 runs is used from the next item on.
    command: () => garden.config.notify?.command,
    cwd: garden.paths.gardenRoot,
    ...(options.onItem ? { onItem: options.onItem } : {}),
    onProblem: options.onProblem,
  });
  if (options.snapshots) {
    const { snapshots } = options;
    let last: readonly AttentionItem[] | undefined;
    const look = () => {
      const snapshot = snapshots.getSnapshot();
      // The empty snapshot before the first load is not the garden's list.
      if (snapshot.version === 0 || snapshot.attention === last) return;
      last = snapshot.attention;
      notifier.observe(snapshot.attention);
    };
    const unsubscribe = snapshots.subscribe(look);
    look();
    return {
      notifier,
      ready: Promise.resolve(),
      flush: async () => look(),
      stop: async () => {
        unsubscribe();
        await notifier.idle();
      },
    };
  }
  const reader = new AttentionReader(garden);
  let stopped = false;
  let reading: Promise<void> | undefined;
  const said = new Set<string>();
  const tick = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (reading) return reading;
    reading = reader
      .read()
      .then((read) => {
        for (const line of read.problems) if (!said.has(line)) (said.add(line), options.onProblem(line));
        if (!stopped) notifier.observe(read.items);
      })
      .catch((error: Error) => options.onProblem(`needs-you list not read: ${error.message}`))
      .finally(() => (reading = undefined));
    return reading;
  };
  const ready = tick();
  const timer = setInterval(() => void tick(), options.pollMs ?? 1000);
  timer.unref();
  return {
    notifier,
    ready,
    flush: async () => {
      await reading;
      await tick();
      await notifier.idle();
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await reading;
      await notifier.idle();
    },
  };
}
