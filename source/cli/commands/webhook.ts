import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { UserError } from '../../errors.js';
import { table, truncateColumns } from '../../format.js';
import { addSubscription, deliveriesWhere, readDeliveries, readSubscriptions, removeSubscription, type Subscription } from '../../server/webhooks/store.js';
import { redeliver } from '../../server/webhooks/redeliver.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/** `HH:MM:SS` of an ISO time (local dates are not needed to read a delivery log). */
const clock = (iso: string | null | undefined) => (iso ? iso.slice(11, 19) : '-');

/** One word for a subscription's health: active, retrying (attempt n), failing. */
export function subscriptionState(s: Subscription): string {
  if (s.retry) return `retrying (attempt ${s.retry.attempt} failed${s.retry.last_status ? `: ${s.retry.last_status}` : ''}; next ${clock(s.retry.next_at)})`;
  return s.status;
}

/**
 * `pak2 webhook add|list|remove|redeliver|deliveries` (docs/server/level2.md,
 * "Webhooks"): subscriptions live in `<runtime-root>/webhooks/`; `pak2
 * serve`, `pak2 cycle` and the workbench deliver them.
 */
export function registerWebhook(program: Command, io: CliIO): void {
  const webhook = program.command('webhook').description('webhook subscriptions: signed POSTs of events to a URL, delivered while a coordinator (pak2 cycle, the workbench) or pak2 serve runs');

  webhook
    .command('add')
    .description('subscribe URL to events (from now on); prints the subscription id')
    .argument('<url>', 'http:// or https:// URL that receives a POST per event')
    .requiredOption('--events <types...>', 'event types, comma-separated (GoalClosed,RunClosed), or * for all')
    .option('--secret-file <file>', 'the signing secret (its first line); default: a random secret')
    .option('--json', 'print the subscription as JSON')
    .action(async (url: string, opts: { events: string[]; secretFile?: string; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      let secret: string | undefined;
      if (opts.secretFile !== undefined) {
        try {
          secret = fs.readFileSync(path.resolve(io.cwd, opts.secretFile), 'utf8').split('\n')[0]!.trim();
        } catch (error) {
          throw new UserError(`--secret-file ${opts.secretFile}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
        }
        if (!secret) throw new UserError(`--secret-file ${opts.secretFile}: the file's first line is empty`);
      }
      const { subscription, secretFile } = await addSubscription(garden.paths, { url, events: opts.events, rules: garden.config.webhooks, ...(secret !== undefined ? { secret } : {}) });
      if (opts.json) return printJson(io, subscription);
      io.out(subscription.id);
      io.err(`pak2: webhook ${subscription.id} → ${subscription.url} for ${subscription.events.join(', ')}; signing secret in ${secretFile}; a running coordinator (pak2 cycle, the workbench) or pak2 serve delivers it`);
    });

  webhook
    .command('list')
    .description('subscriptions with their state, cursor and counts')
    .option('--json', 'print the subscriptions as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const subs = await readSubscriptions(garden.paths);
      if (opts.json) return printJson(io, subs);
      if (subs.length === 0) return io.out('no webhooks: pak2 webhook add URL --events GoalClosed,RunClosed');
      io.out(
        table(
          ['ID', 'URL', 'EVENTS', 'STATE', 'DELIVERED', 'GAVE UP', 'CURSOR'],
          subs.map((s) => [s.id, truncateColumns(s.url, 40), truncateColumns(s.events.join(','), 30), subscriptionState(s), String(s.delivered), String(s.gave_up), s.cursor ?? '-']),
        ),
      );
    });

  webhook
    .command('remove')
    .description('remove a subscription and its secret (its delivery records stay)')
    .argument('<id>', 'the subscription id (wh-…)')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const removed = await removeSubscription(garden.paths, id);
      io.err(`pak2: removed webhook ${removed.id} (${removed.url})`);
    });

  webhook
    .command('redeliver')
    .description('POST again the events a webhook gave up on (or those named), once each; each attempt goes in the delivery log')
    .argument('<id>', 'the subscription id (wh-…)')
    .option('--event <ids...>', 'only these event ids (pak2 webhook deliveries shows them)')
    .option('--json', 'one delivery record per line')
    .action(async (id: string, opts: { event?: string[]; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const done = await redeliver(garden, id, opts.event ? { events: opts.event.flatMap((e) => e.split(',')).map((e) => e.trim()).filter(Boolean) } : {});
      if (opts.json) {
        for (const d of done) io.out(JSON.stringify(d.record));
      } else if (done.length === 0) {
        io.out(`webhook ${id}: no event given up on to redeliver`);
      } else {
        for (const d of done) io.out(`${d.event} ${d.record.event_type}: ${d.record.outcome === 'delivered' ? `delivered (${d.record.status_code})` : `failed again (${d.record.error})`}`);
      }
      const failed = done.filter((d) => d.record.outcome !== 'delivered').length;
      if (failed) throw new UserError(`webhook ${id}: ${failed} of ${done.length} not delivered; pak2 webhook deliveries ${id} shows why`, { exitCode: 1 });
    });

  webhook
    .command('deliveries')
    .description('the delivery log: each attempt with its status code, latency and next retry')
    .argument('[id]', 'only this subscription')
    .option('--limit <n>', 'the last N attempts', '50')
    .option('--json', 'one JSON record per line')
    .action(async (id: string | undefined, opts: { limit: string; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      if (!/^[1-9]\d*$/.test(opts.limit)) throw new UserError(`--limit ${opts.limit}: must be a whole number above 0`);
      if (id !== undefined && !(await readSubscriptions(garden.paths)).some((s) => s.id === id) && (await readDeliveries(garden.paths, { subscription: id, limit: 1 })).length === 0) {
        throw new UserError(`ID ${id}: no such webhook and no deliveries for it (pak2 webhook list shows them)`);
      }
      const records = await readDeliveries(garden.paths, { ...(id ? { subscription: id } : {}), limit: Number(opts.limit) });
      if (opts.json) {
        for (const record of records) io.out(JSON.stringify(record));
        return;
      }
      if (records.length === 0) return io.out(`no deliveries yet (${deliveriesWhere(garden.paths)})`);
      io.out(
        table(
          ['TIME', 'WEBHOOK', 'EVENT', 'TYPE', 'TRY', 'STATUS', 'MS', 'OUTCOME', 'NEXT RETRY', 'ERROR'],
          records.map((r) => [
            r.ts.replace('T', ' ').slice(0, 19),
            r.subscription,
            r.event,
            r.event_type,
            String(r.attempt),
            r.status_code === null ? '-' : String(r.status_code),
            String(r.latency_ms),
            r.outcome,
            clock(r.next_retry_at),
            truncateColumns(r.error ?? '', 40),
          ]),
        ),
      );
    });
}
