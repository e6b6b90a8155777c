/**
 * The crash-injection harness, run longer than CI does (issue 15):
 *   npm run harness:crash -- --iterations 200 [--goals 4]
 * Kills a real `pak2 cycle --no-ui` with SIGKILL at a random moment, restarts
 * it to idle, checks the world (test/reliability/crash-harness.ts) and
 * prints the figures. Exits 1 when any iteration found a violation.
 */
import { crashIteration } from '../test/reliability/crash-harness.js';

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`crash-harness: --${name} must be a whole number ≥ 1 (got ${process.argv[at + 1]})\n`);
    process.exit(2);
  }
  return value;
}

const iterations = arg('iterations', 20);
const goals = arg('goals', 4);
let violated = 0;
let runs = 0;
let interrupted = 0;
const restarts: number[] = [];
const started = Date.now();
for (let i = 0; i < iterations; i += 1) {
  const killAfterMs = Math.floor(Math.random() * 2500);
  const result = await crashIteration({ goals, killAfterMs });
  runs += result.runs;
  interrupted += result.interrupted;
  restarts.push(result.restartMs);
  if (result.violations.length) {
    violated += 1;
    process.stdout.write(`iteration ${i + 1}: killed after ${killAfterMs} ms: ${result.violations.length} violation(s)\n  ${result.violations.join('\n  ')}\n`);
  }
}
restarts.sort((a, b) => a - b);
process.stdout.write(
  [
    `iterations ${iterations}, goals per iteration ${goals}, wall ${((Date.now() - started) / 1000).toFixed(1)} s`,
    `runs ${runs}, interrupted by the kill and requeued ${interrupted}`,
    `restart to idle: median ${restarts[Math.floor(restarts.length / 2)]} ms, max ${restarts.at(-1)} ms`,
    `iterations with a violation: ${violated}`,
  ].join('\n') + '\n',
);
process.exit(violated ? 1 : 0);
