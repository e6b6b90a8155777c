import fs from 'node:fs';
import type { Garden } from '../../garden/index.js';
import { LogTail } from '../log-tail.js';
import { webhookPaths } from './store.js';
import { WebhookWorker, type WebhookHealth, type WebhookWorkerOptions } from './worker.js';

/** Options of {@link startWebhookDelivery}. */
export interface WebhookDeliveryOptions extends Omit<WebhookWorkerOptions, 'garden' | 'tail'> {
  /** How often a garden without subscriptions.json is checked for one, ms. Default 2000. */
  checkMs?: number;
}

/**
 * Delivers the garden's webhooks from a coordinator process that serves no
 * HTTP (the workbench, `pak2 cycle`; docs/server/level2.md, "Webhooks"), so a
 * `pak2 webhook add` is never idle while a coordinator runs. The
 * {@link WebhookWorker} starts once `webhooks/subscriptions.json` exists
 * (checked every `checkMs` until then: nothing is created in a garden that
 * has no webhooks); its lock makes one process of the garden deliver, the
 * others wait to take over, so no event is delivered twice.
 *
 * @returns the stop (lets a POST in flight finish, releases the lock).
 */
export function startWebhookDelivery(garden: Garden, options: WebhookDeliveryOptions = {}): { stop(): Promise<void>; health(): WebhookHealth | undefined } {
  let tail: LogTail | undefined;
  let worker: WebhookWorker | undefined;
  let starting: Promise<void> | undefined;
  let stopped = false;
  const { checkMs, ...workerOptions } = options;
  const check = () => {
    if (stopped || starting || !fs.existsSync(webhookPaths(garden.paths).subscriptions)) return;
    clearInterval(timer);
    starting = (async () => {
      tail = new LogTail(garden.paths);
      await tail.start();
      worker = new WebhookWorker({ ...workerOptions, garden, tail });
      await worker.start();
    })().catch((error: Error) => options.onNotice?.(`webhooks: delivery did not start: ${error.message}`));
  };
  const timer = setInterval(check, checkMs ?? 2000);
  timer.unref();
  check();
  return {
    health: () => worker?.health(),
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await starting;
      await worker?.stop();
      await tail?.stop();
    },
  };
}
