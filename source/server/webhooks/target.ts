import dns from 'node:dns/promises';
import net from 'node:net';

/**
 * Where a webhook may point (docs/server/level2.md, "Webhooks"): http or
 * https, no credentials in the URL, and no link-local or cloud metadata
 * address (169.254.0.0/16, fe80::/10, fd00:ec2::254, 100.100.100.200)
 * unless `[webhooks] allow_link_local = true`. Loopback and private
 * networks are allowed: receivers often live there.
 */
export interface WebhookTargetRules {
  /** `[webhooks] allow_link_local`: link-local and metadata addresses too. */
  allowLinkLocal: boolean;
}

/** Cloud metadata services that sit outside the link-local ranges. */
const METADATA_ADDRESSES = new Set(['100.100.100.200', 'fd00:ec2::254']);

/** True for a link-local or cloud-metadata address (IPv4, IPv6, or IPv4 mapped into IPv6). */
export function isLinkLocalOrMetadata(address: string): boolean {
  const plain = address.replace(/^\[|\]$/g, '').toLowerCase();
  // An IPv4 address carried in IPv6: mapped (::ffff:), compatible (::) or NAT64 (64:ff9b::), dotted or in hex.
  const hex = /^(?:::ffff:|64:ff9b::|::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(plain);
  const fromHex = hex ? [Number.parseInt(hex[1]!, 16) >> 8, Number.parseInt(hex[1]!, 16) & 255, Number.parseInt(hex[2]!, 16) >> 8, Number.parseInt(hex[2]!, 16) & 255].join('.') : undefined;
  const mapped = /^(?:::ffff:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(plain)?.[1] ?? fromHex;
  const v4 = mapped ?? (net.isIPv4(plain) ? plain : undefined);
  if (v4) return v4.startsWith('169.254.') || METADATA_ADDRESSES.has(v4);
  if (!net.isIPv6(plain)) return false;
  if (METADATA_ADDRESSES.has(plain) || plain === 'fd00:ec2:0:0:0:0:0:254') return true;
  // fe80::/10: the first group fe80 … febf.
  const first = Number.parseInt(plain.split(':')[0] || '0', 16);
  return first >= 0xfe80 && first <= 0xfebf;
}

/**
 * What is wrong with a webhook URL as written, in one line naming `what`
 * (e.g. `URL https://…`), or undefined. Checks the scheme and credentials,
 * and a literal address against the rules; names are checked by
 * {@link checkWebhookAddress} when resolved.
 */
export function webhookUrlProblem(url: URL, rules: WebhookTargetRules, what: string): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${what}: only http and https URLs can receive webhooks`;
  if (url.username || url.password) return `${what}: a URL with credentials (user:password@) is refused: they would sit in subscriptions.json and every delivery record; the receiver checks the signature instead (--secret-file)`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !rules.allowLinkLocal && isLinkLocalOrMetadata(host)) return linkLocalRefusal(what, host, host);
  return undefined;
}

function linkLocalRefusal(what: string, host: string, address: string): string {
  return `${what}: ${host === address ? host : `${host} resolves to ${address}, which`} is a link-local or cloud metadata address; refused unless [webhooks] allow_link_local = true in PAK2.toml`;
}

/**
 * Resolves the URL's host and checks every address it has against the
 * rules. A name that does not resolve is not refused here (the POST says
 * so); a literal address is checked as is.
 *
 * @returns the refusal in one line, or undefined when the target may be posted to.
 */
export async function checkWebhookAddress(url: URL, rules: WebhookTargetRules, what: string): Promise<string | undefined> {
  const written = webhookUrlProblem(url, rules, what);
  if (written || rules.allowLinkLocal) return written;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) return undefined;
  let addresses: string[];
  try {
    addresses = (await dns.lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return undefined;
  }
  const bad = addresses.find(isLinkLocalOrMetadata);
  return bad ? linkLocalRefusal(what, host, bad) : undefined;
}
