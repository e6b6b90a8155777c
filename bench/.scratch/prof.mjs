import fs from 'node:fs';
const file = process.argv[2];
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map();
const dt = p.timeDeltas;
const counts = new Map();
for (let i = 0; i < p.samples.length; i++) { counts.set(p.samples[i], (counts.get(p.samples[i]) ?? 0) + (dt[i + 1] ?? 0)); }
const key = (n) => { const f = n.callFrame; const u = f.url.replace(/^.*\/work\/main\//, ''); return `${f.functionName || '(anon)'} ${u}:${f.lineNumber + 1}`; };
const incl = new Map(); const selfm = new Map();
let total = 0;
for (const [id, us] of counts) {
  total += us;
  const n = byId.get(id);
  selfm.set(key(n), (selfm.get(key(n)) ?? 0) + us);
  const seen = new Set();
  let cur = id;
  while (cur !== undefined) { const k = key(byId.get(cur)); if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + us); } cur = parent.get(cur); }
}
const top = (m, n, filter = () => true) => [...m].filter(([k]) => filter(k)).sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${(v / 1000).toFixed(0).padStart(7)} ms ${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
console.log(`total sampled ${(total / 1000).toFixed(0)} ms`);
console.log('--- self'); console.log(top(selfm, 35));
console.log('--- inclusive, dist/'); console.log(top(incl, 45, (k) => k.includes('dist/')));
console.log('--- inclusive, all'); console.log(top(incl, 40));
