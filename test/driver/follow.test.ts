import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { launch } from '../../source/driver/launch.js';

// The stream follower of a launch (issue 13): lines are found by their newline byte and decoded one at a
// time. What the classifier sees must be every line, whole and exact, wherever the 64 KB pieces split them.

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-follow-'));
  fs.writeFileSync(path.join(dir, 'prompt.md'), 'prompt\n');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs `script` (node) as the agent; returns the lines the classifier saw and what stderr was forwarded. */
async function follow(script: string, pollMs = 200): Promise<{ lines: string[]; stderr: string; exitCode: number | null }> {
  const file = path.join(dir, 'agent.mjs');
  fs.writeFileSync(file, script);
  const lines: string[] = [];
  let stderr = '';
  const result = await launch(
    { command: process.execPath, args: [file] },
    {
      cwd: dir,
      stdinFile: path.join(dir, 'prompt.md'),
      stdoutFile: path.join(dir, 'events.jsonl'),
      stderrFile: path.join(dir, 'stderr.log'),
      classifyLine: (line) => {
        lines.push(line);
        return { progress: true, label: 'output' };
      },
      onStderr: (chunk) => (stderr += chunk),
      pollMs,
    },
  );
  return { lines, stderr, exitCode: result.exitCode };
}

describe('the launch follower', () => {
  it('hands the classifier every line whole: multi-byte characters across piece boundaries, a 200 KB line, a line written in two halves, an unterminated last line', async () => {
    // 'é' (2 bytes), '✓' (3 bytes), '😀' (4 bytes), CJK: placed so every 64 KB boundary of the file falls inside a character somewhere.
    const long = Array.from({ length: 40_000 }, (_, i) => ['é', '✓', '😀', '漢', 'a'][i % 5]).join('');
    const script = `
      import fs from 'node:fs';
      const long = ${JSON.stringify(long)};
      const lines = [];
      for (let i = 0; i < 3000; i++) lines.push(JSON.stringify({ type: 'assistant', n: i, text: '✓ ' + 'x'.repeat(i % 97) + ' 漢字 😀' }));
      lines.push(long);
      fs.writeSync(1, lines.join('\\n') + '\\n');
      const half = Buffer.from(JSON.stringify({ type: 'result', text: 'split ✓ here' }) + '\\n');
      fs.writeSync(1, half.subarray(0, 20)); // the line's first 20 bytes; the rest after more than a poll
      await new Promise((r) => setTimeout(r, 450));
      fs.writeSync(1, half.subarray(20));
      fs.writeSync(1, 'last line without newline ✓');
    `;
    const { lines, exitCode } = await follow(script, 50);
    expect(exitCode).toBe(0);
    expect(lines).toHaveLength(3000 + 1 + 1 + 1);
    for (let i = 0; i < 3000; i++) expect(JSON.parse(lines[i]!)).toEqual({ type: 'assistant', n: i, text: `✓ ${'x'.repeat(i % 97)} 漢字 😀` });
    expect(lines[3000]).toBe(long);
    expect(JSON.parse(lines[3001]!)).toEqual({ type: 'result', text: 'split ✓ here' });
    expect(lines[3002]).toBe('last line without newline ✓');
    expect(lines.join('')).not.toContain('\uFFFD');
  });

  it('a multi-byte character split between two writes of one line is decoded whole', async () => {
    const script = `
      import fs from 'node:fs';
      const line = Buffer.from('{"text":"✓😀"}\\n');
      fs.writeSync(1, line.subarray(0, 11)); // inside '✓' (bytes 10-12)
      await new Promise((r) => setTimeout(r, 300));
      fs.writeSync(1, line.subarray(11, 15)); // inside '😀'
      await new Promise((r) => setTimeout(r, 300));
      fs.writeSync(1, line.subarray(15));
    `;
    const { lines } = await follow(script, 50);
    expect(lines).toEqual(['{"text":"✓😀"}']);
  });

  it('forwards stderr once, an unterminated last line included and ended with a newline', async () => {
    const script = `
      import fs from 'node:fs';
      fs.writeSync(2, 'warning: one ✓\\n');
      await new Promise((r) => setTimeout(r, 300));
      fs.writeSync(2, 'no newline at the end');
    `;
    const { stderr } = await follow(script, 50);
    expect(stderr).toBe('warning: one ✓\nno newline at the end\n'); // ended where it is shown, as stderr.log is before the next launch appends
    expect(fs.readFileSync(path.join(dir, 'stderr.log'), 'utf8')).toBe('warning: one ✓\nno newline at the end');
  });
});
