/**
 * Every package `npm ci` installs runs on the Node the README names (issue
 * 28: fastify's light-my-request pulled in cookie@2, `engines.node >=22`,
 * and `npm ci` on Node 20 warned EBADENGINE). The README's "Node N or
 * newer" and package.json's `engines.node` say the same N, and no package
 * in package-lock.json declares an `engines.node` range that leaves Node N
 * out: none without a Node N release in it, and none the Node running the
 * suite fails when that is a Node N (what npm itself checks).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// semver is fastify's dependency, not pak2's: the one npm uses to check engines.
const semver = createRequire(import.meta.url)('semver') as {
  intersects(a: string, b: string): boolean;
  satisfies(version: string, range: string): boolean;
  validRange(range: string): string | null;
};

interface Lock {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
}

/** The major the README names: "Node 20 or newer". */
function readmeNode(): number {
  const named = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').match(/^Node (\d+) or newer\.$/m);
  if (!named) throw new Error('README.md does not say "Node N or newer."');
  return Number(named[1]);
}

/** The lock's packages whose `engines.node` leaves Node `major` out, as `name@version: range`; `running` is the Node version to check too (when its major is `major`). */
function excluding(lock: Lock, major: number, running?: string): string[] {
  const line = `>=${major}.0.0 <${major + 1}.0.0`;
  const out: string[] = [];
  for (const [where, pkg] of Object.entries(lock.packages)) {
    const range = !Array.isArray(pkg.engines) ? pkg.engines?.node : undefined;
    if (!where || !range) continue;
    const name = where.replace(/^.*node_modules\//, '');
    if (!semver.validRange(range) || !semver.intersects(range, line) || (running && semver.satisfies(running, line) && !semver.satisfies(running, range))) out.push(`${name}@${pkg.version ?? '?'}: ${range}`);
  }
  return out;
}

describe('the Node the README names runs every locked package', () => {
  it('README and package.json name the same Node', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${readmeNode()}`);
  });

  it('no package in package-lock.json declares engines.node without it', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
    expect(Object.keys(lock.packages).length).toBeGreaterThan(50);
    expect(excluding(lock, readmeNode(), process.version)).toEqual([]);
  });

  it('the check finds what npm warned about (cookie@2 needs Node 22), and a range it cannot read', () => {
    const lock: Lock = {
      packages: {
        '': { version: '0.1.0', engines: { node: '>=20' } },
        'node_modules/cookie': { version: '2.0.2', engines: { node: '>=22' } },
        'node_modules/vite': { version: '8.3.8', engines: { node: '^20.19.0 || >=22.12.0' } },
        'node_modules/a/node_modules/odd': { version: '1.0.0', engines: { node: 'node twenty' } },
        'node_modules/old': { version: '1.0.0', engines: ['node >= 0.4'] },
      },
    };
    expect(excluding(lock, 20)).toEqual(['cookie@2.0.2: >=22', 'odd@1.0.0: node twenty']);
    // What npm checks: the Node that runs it. Node 20.10 is left out by vite's range; a Node 22 is not a Node 20 and is not held to it.
    expect(excluding(lock, 20, 'v20.10.0')).toEqual(['cookie@2.0.2: >=22', 'vite@8.3.8: ^20.19.0 || >=22.12.0', 'odd@1.0.0: node twenty']);
    expect(excluding(lock, 20, 'v22.1.0')).toEqual(['cookie@2.0.2: >=22', 'odd@1.0.0: node twenty']);
  });
});
