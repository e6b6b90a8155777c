/**
 * The core's imports point one way (shared DESIGN.md, "Layout"; issue 14):
 * contracts ← garden ← history ← store ← driver ← coordinator ← submit /
 * snapshot ← session / lifecycle ← ui / cli. A room imports only rooms at
 * or below its rank; the UI takes only types from the store; and no runtime
 * import cycle exists between files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../source');

/** Rank of each room; a file may import rooms of equal or lower rank. Top-level files (errors.ts, format.ts, …) are rank 0.5. */
const RANK: Record<string, number> = {
  contracts: 0,
  '.': 0.5,
  garden: 1,
  history: 2,
  store: 3,
  driver: 4,
  guard: 4,
  worktree: 4,
  budget: 4,
  landing: 4.5,
  coordinator: 5,
  submit: 6,
  snapshot: 6,
  session: 7,
  lifecycle: 7,
  doctor: 7,
  server: 8,
  runner: 8,
  ui: 8,
  cli: 9,
};

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
}

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : []));
}

function roomOf(file: string): string {
  const rel = path.relative(SOURCE, file);
  return rel.includes(path.sep) ? rel.split(path.sep)[0]! : '.';
}

function importsOf(file: string): Import[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: Import[] = [];
  const re = /^(import|export)\s+(type\s+)?([^'"]*?)\s*from\s+'(\.[^']+)'/gm;
  for (const m of text.matchAll(re)) {
    const spec = m[4]!;
    const names = m[3]!;
    // `import { type A, type B }` is type-only too.
    const inner = names.match(/^\{([^}]*)\}$/)?.[1];
    const allTypes = inner !== undefined && inner.split(',').map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith('type '));
    let target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '');
    target = fs.existsSync(`${target}.ts`) ? `${target}.ts` : fs.existsSync(`${target}.tsx`) ? `${target}.tsx` : path.join(target, 'index.ts');
    out.push({ from: file, to: target, typeOnly: Boolean(m[2]) || allTypes });
  }
  return out;
}

const ALL = files(SOURCE).flatMap(importsOf);

describe('import direction', () => {
  it('every room is ranked', () => {
    const rooms = new Set(files(SOURCE).map(roomOf));
    expect([...rooms].filter((r) => !(r in RANK))).toEqual([]);
  });

  it('no import points up', () => {
    const against = ALL.filter((i) => RANK[roomOf(i.to)]! > RANK[roomOf(i.from)]!).map((i) => `${path.relative(SOURCE, i.from)} -> ${path.relative(SOURCE, i.to)}`);
    expect(against).toEqual([]);
  });

  it('the UI never writes through the store: it takes only types from store, garden and history', () => {
    const writes = ALL.filter((i) => roomOf(i.from) === 'ui' && ['store', 'garden', 'history'].includes(roomOf(i.to)) && !i.typeOnly)
      .map((i) => `${path.relative(SOURCE, i.from)} -> ${path.relative(SOURCE, i.to)}`);
    expect(writes).toEqual([]);
  });

  it('no runtime import cycle', () => {
    const graph = new Map<string, string[]>();
    for (const i of ALL) if (!i.typeOnly) graph.set(i.from, [...(graph.get(i.from) ?? []), i.to]);
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const stack: string[] = [];
    const visit = (node: string) => {
      state.set(node, 'visiting');
      stack.push(node);
      for (const next of graph.get(node) ?? []) {
        if (state.get(next) === 'visiting') cycles.push([...stack.slice(stack.indexOf(next)), next].map((f) => path.relative(SOURCE, f)).join(' -> '));
        else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(node, 'done');
    };
    for (const node of graph.keys()) if (!state.has(node)) visit(node);
    expect(cycles).toEqual([]);
  });
});
