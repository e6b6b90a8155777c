import readline from 'node:readline';
import type { Command } from 'commander';
import { readHolder } from '../../coordinator/lock.js';
import { UserError } from '../../errors.js';
import { sanitize } from '../../format.js';
import type { Garden } from '../../garden/index.js';
import { latestConversation, latestRun, readConversationMessages, readGoal, type ChatMessage } from '../../store/index.js';
import { readReplyWait } from '../../snapshot/reply-wait.js';
import { appendGoalSupplement, sendOperatorMessage } from '../../submit/index.js';
import { gardenOf } from '../context.js';
import type { CliIO } from '../main.js';

function line(m: ChatMessage): string {
  const where = m.note ? ` (${m.run ?? ''}${m.run ? ', ' : ''}${m.note})` : m.run ? ` (${m.run})` : '';
  return sanitize(`${m.ts.slice(11, 19)} ${m.sender}: ${m.text}${m.sender === 'garden' ? where : ''}`);
}

/**
 * Waits until the conversation has a garden message answering `goalId`
 * (from its run), printing every new message meanwhile.
 *
 * @returns the reply; `{failed}` when the reply run ended without one; undefined after `timeoutMs`.
 */
async function awaitReply(garden: Garden, conversationId: string, goalId: string, seen: number, io: CliIO, timeoutMs: number): Promise<ChatMessage | { failed: string } | undefined> {
  const end = Date.now() + timeoutMs;
  let shown = seen;
  // What the reply waits for, said when it changes (docs/conversation/level2.md, "Waiting for a reply"); looked at every second or so.
  let said: string | undefined;
  let lookedAt = 0;
  while (Date.now() < end) {
    const messages = await readConversationMessages(garden.paths, conversationId, 10_000);
    for (const m of messages.slice(shown)) if (m.sender !== 'operator') io.out(line(m));
    shown = messages.length;
    const reply = messages.find((m) => m.sender === 'garden' && m.run?.startsWith(`${goalId}-r`));
    if (reply) return reply;
    // A reply run that failed closes its goal without a reply: say so now, not at the timeout.
    const goal = await readGoal(garden.paths, goalId).catch(() => undefined);
    if (goal?.status === 'closed') {
      const run = await latestRun(garden.paths, goalId).catch(() => undefined);
      const why = run ? `${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}${run.outputs?.error ? `: ${run.outputs.error}` : ''}` : goal.closed_reason;
      return { failed: `the reply run for ${goalId} ended ${why}` };
    }
    if (Date.now() - lookedAt >= 1000) {
      lookedAt = Date.now();
      const waiting = goal?.status === 'queued' ? await readReplyWait(garden, goalId).catch(() => undefined) : undefined;
      if (waiting && waiting !== said) io.err(sanitize(`pak2: ${goalId} ${waiting}`));
      else if (!waiting && said && goal && goal.status !== 'queued') io.err(`pak2: ${goalId} is ${goal.status} now`);
      if (waiting || goal?.status !== 'queued') said = waiting;
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return undefined;
}

interface ChatOptions {
  conversation?: string;
  message?: string;
  wait: boolean;
  timeout: string;
  plant?: string;
}

/** `pak2 chat` and `pak2 supplement`: the operator's conversation with the garden. */
export function registerChat(program: Command, io: CliIO): void {
  program
    .command('chat')
    .description('talk with the garden: each line queues a reply goal; the coordinator (pak2 cycle) answers')
    .option('-m, --message <text>', 'send one message, wait for the reply, and exit')
    .option('--no-wait', 'with --message: do not wait for the reply')
    .option('--timeout <seconds>', 'how long to wait for a reply', '600')
    .option('--plant <plant>', 'the plant that answers (default gardener)')
    .option('--conversation <id>', 'write in this conversation (default: the latest)')
    .action(async (opts: ChatOptions, command: Command) => {
      const garden = gardenOf(command, io);
      const timeoutMs = Number(opts.timeout) * 1000;
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new UserError(`--timeout ${opts.timeout}: a positive number of seconds`);
      if (!opts.wait && opts.message === undefined) throw new UserError('--no-wait goes with --message');
      let warned = false;
      const send = async (text: string, wait: boolean) => {
        const current = opts.conversation ?? (await latestConversation(garden.paths))?.id;
        const before = current ? (await readConversationMessages(garden.paths, current, 10_000).catch(() => [])).length : 0;
        const result = await sendOperatorMessage(garden, text, { ...(opts.plant ? { plant: opts.plant } : {}), ...(opts.conversation ? { conversationId: opts.conversation } : {}) });
        io.err(`pak2: queued ${result.goal.id} in conversation ${result.conversationId}`);
        // Waiting, the wait itself says so (and what else it waits for).
        if (!wait && !warned && !readHolder(garden.paths)) {
          warned = true;
          io.err('pak2: no coordinator is running this garden: start `pak2` or `pak2 cycle` in another terminal; the message stays queued until then');
        }
        if (!wait) return true;
        const reply = await awaitReply(garden, result.conversationId, result.goal.id, before + 1, io, timeoutMs);
        if (!reply) {
          io.err(`pak2: no reply within ${opts.timeout} s; the goal ${result.goal.id} is still open`);
          return false;
        }
        if ('failed' in reply) {
          io.err(sanitize(`pak2: ${reply.failed}`));
          return false;
        }
        return true;
      };
      if (opts.message !== undefined) {
        if (!(await send(opts.message, opts.wait))) io.exitCode = 1;
        return;
      }
      const shown = opts.conversation ?? (await latestConversation(garden.paths))?.id;
      if (shown) for (const m of await readConversationMessages(garden.paths, shown, 20)) io.out(line(m));
      io.out('(type a message and press enter; ctrl-d to leave)');
      const rl = readline.createInterface({ input: process.stdin, output: process.stdout, prompt: '› ' });
      rl.prompt();
      for await (const text of rl) {
        if (text.trim()) await send(text, true).catch((error: Error) => io.err(`pak2: ${error.message}`));
        rl.prompt();
      }
    });

  program
    .command('supplement')
    .description('add context to a queued goal that came from a conversation (frozen into its dispatch packet)')
    .argument('<goal>', 'the goal id (N-slug)')
    .requiredOption('--text <text>', 'the supplement')
    .action(async (goalId: string, opts: { text: string }, command: Command) => {
      const garden = gardenOf(command, io);
      await appendGoalSupplement(garden, goalId, opts.text);
      io.out(`supplement added to ${goalId}`);
    });
}
