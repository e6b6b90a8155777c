import fs from 'node:fs';
import os from 'node:os';
import type { GardenPaths } from '../garden/index.js';

/** An absolute path of two or more segments, not one of the API's own routes. */
const ABSOLUTE_PATH = /(^|[\s(=:'"`])(\/(?!api\/)[^\s'"`():,;]+\/[^\s'"`():,;]*)/g;

/**
 * A message made fit for an HTTP body (docs/server/level2.md, "Errors"): no
 * machine path in it. The runtime root reads `<runtime-root>`, the garden
 * root `<garden>`, the home directory `~`; any other absolute path is cut to
 * `…/<its last name>` when its first directory is one of this machine's (a
 * route such as `/goals/:id/cancel` is left as it is). The rest of the
 * message is kept word for word.
 */
export function publicText(text: string, paths: GardenPaths): string {
  let out = text;
  // Longest first: the runtime root is usually inside the garden.
  const roots: [string, string][] = [
    [paths.runtimeRoot, '<runtime-root>'],
    [paths.gardenRoot, '<garden>'],
    [os.homedir(), '~'],
    [os.tmpdir(), '<tmp>'],
  ];
  roots.sort((a, b) => b[0].length - a[0].length);
  for (const [root, name] of roots) if (root.length > 1) out = out.split(root).join(name);
  // Only a path whose first directory is one of this machine's (/tmp/…, /srv/…): a route (`/goals/:id/cancel`) is not one.
  return out.replace(ABSOLUTE_PATH, (all, lead: string, p: string) => (onThisMachine(p) ? `${lead}…/${p.replace(/\/+$/, '').split('/').pop()}` : all));
}

const topDirs = new Map<string, boolean>();
function onThisMachine(p: string): boolean {
  const top = `/${p.split('/')[1] ?? ''}`;
  let known = topDirs.get(top);
  if (known === undefined) {
    known = fs.existsSync(top);
    topDirs.set(top, known);
  }
  return known;
}

/**
 * Scrubs a response payload's messages in place with {@link publicText}:
 * `error` (every 4xx/5xx body) and each string of `problems` (listings that
 * skipped an unreadable record). Records themselves are never touched.
 */
export function scrubPayload<T>(payload: T, paths: GardenPaths): T {
  if (!payload || typeof payload !== 'object' || Buffer.isBuffer(payload)) return payload;
  const body = payload as { error?: unknown; problems?: unknown };
  if (typeof body.error === 'string') body.error = publicText(body.error, paths);
  if (Array.isArray(body.problems)) body.problems = body.problems.map((p) => (typeof p === 'string' ? publicText(p, paths) : p));
  return payload;
}
