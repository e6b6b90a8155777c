// @ts-nocheck
import sw8 from './node_modules/ink/node_modules/string-width/index.js';
import { displayWidth } from './source/format.js';
const diffs: Record<string, string[]> = {};
for (let cp = 0x20; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  if (cp >= 0x7f && cp <= 0x9f) continue;
  const s = String.fromCodePoint(cp);
  const a = displayWidth(s), b = sw8(s);
  if (a !== b) (diffs[`${a}->${b}`] ??= []).push(cp.toString(16));
}
for (const [k, v] of Object.entries(diffs)) console.log(k, v.length, v.slice(0, 30).join(' '));
const seqs = ['⚠️', '⚠\ufe0e', '👨‍👩‍👧', '1️⃣', '1\u20e3', '🇯🇵', '👍🏽', 'é', 'e\u0301', '각', '\u1100\u1161', '\u1100\u1161\u11a8', 'ｶﾞ', 'क्षि', '☀️', '❤️', '🏳️‍🌈', '調', 'ﾞ', '\u200d', 'a\u200db', '🧑‍💻', '\u0e01\u0e33'];
for (const s of seqs) if (displayWidth(s) !== sw8(s)) console.log('seq diff', JSON.stringify(s), displayWidth(s), sw8(s));
const t = '調😀⚠ x'.repeat(40000);
let t0 = performance.now(); displayWidth(t); console.log('200K mixed', performance.now() - t0);
t0 = performance.now(); sw8(t.slice(0, 20000)); console.log('sw8 20K', performance.now() - t0);
