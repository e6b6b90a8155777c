import crypto from 'node:crypto';

/** Headers of every webhook delivery (docs/server/level2.md, "Webhooks"). */
export const WEBHOOK_HEADERS = {
  eventId: 'X-Pak2-Event-Id',
  eventType: 'X-Pak2-Event-Type',
  subscription: 'X-Pak2-Subscription',
  attempt: 'X-Pak2-Attempt',
  timestamp: 'X-Pak2-Timestamp',
  signature: 'X-Pak2-Signature',
} as const;

/**
 * The signature header's value: `v1=` and the hex HMAC-SHA256, keyed with
 * the subscription's secret, of `"<timestamp>.<body>"` (timestamp in unix
 * seconds, the body's exact bytes).
 */
export function signDelivery(secret: string, timestamp: number, body: string): string {
  return `v1=${crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}
