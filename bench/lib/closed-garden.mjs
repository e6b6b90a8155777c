// Closed goals written straight into a runtime root in pak2's own format
// (what the file store writes for a goal submitted, run once and closed
// success): the goal file, the run's meta.json and its seal, the eight
// events of its life in the coordinator log, its line in the closed ledger,
// and the goal counter. For benches and tests that need a garden of tens of
// thousands of closed goals without running them (bench/store-transfer.mjs,
// test/store/transfer.test.ts). Appends to a garden that has records
// already: goal numbers continue from its counter.
import fs from 'node:fs';
import path from 'node:path';
import { monotonicFactory } from 'ulid';

const text = (value) => `${JSON.stringify(value, null, 2)}\n`;
const line = (value) => `${JSON.stringify(value)}\n`;

/**
 * Writes `count` closed goals (with one successful run each) under
 * `runtimeRoot`, numbered on from its `goals/.counter`. `start` is the first
 * goal's submit time (ms); each goal's life takes 4 s of it, one goal a
 * second after the other. `plant` is the goal's plant.
 * Returns the ids written.
 */
export function writeClosedGoals(runtimeRoot, { count, start = Date.parse('2026-01-01T00:00:00.000Z'), plant = 'gardener' }) {
  const goalsDir = path.join(runtimeRoot, 'goals');
  const runsDir = path.join(runtimeRoot, 'runs');
  const sealsDir = path.join(runsDir, '.seals');
  const eventsDir = path.join(runtimeRoot, 'events');
  for (const dir of [goalsDir, sealsDir, eventsDir]) fs.mkdirSync(dir, { recursive: true });
  const counterFile = path.join(goalsDir, '.counter');
  const first = (fs.existsSync(counterFile) ? Number.parseInt(fs.readFileSync(counterFile, 'utf8'), 10) : 0) + 1;
  const nextId = monotonicFactory();
  const events = [];
  const ledger = [];
  const ids = [];
  for (let i = 0; i < count; i += 1) {
    const n = first + i;
    const id = `${n}-closed-goal-${n}`;
    const runId = `${id}-r1`;
    const at = (s) => new Date(start + i * 1000 + s * 1000).toISOString();
    const goal = { id, type: 'build', status: 'closed', priority: 50, assigned_to: plant, body: `Closed goal number ${n}: fix the thing it names.`, submitted_at: at(0), updated_at: at(4), closed_reason: 'success', closed_at: at(4) };
    const run = {
      id: runId, goal: id, plant, status: 'success', started_at: at(1), driver: 'command', model: 'default', completed_at: at(3),
      cost: { source: 'provider', usd: 0.0123 }, reflection: `Learned: goal ${n} needed one pass.`, outputs: { final_text: 'done' }, num_turns: 2, session_id: `session-${n}`, exit_code: 0,
    };
    fs.writeFileSync(path.join(goalsDir, `${id}.json`), text(goal), { mode: 0o600 });
    fs.mkdirSync(path.join(runsDir, runId));
    fs.writeFileSync(path.join(sealsDir, `${runId}.json`), text(run), { mode: 0o600 });
    fs.writeFileSync(path.join(runsDir, runId, 'meta.json'), text(run), { mode: 0o600 });
    const event = (s, fields) => events.push(line({ id: nextId(start + i * 1000 + s * 1000), ...fields, ts: at(s) }));
    event(0, { type: 'GoalSubmitted', goal: id, plant, detail: 'build' });
    event(1, { type: 'GoalTransitioned', goal: id, from: 'queued', to: 'dispatched' });
    event(1, { type: 'RunStarted', run: runId, goal: id, plant, detail: 'command/default' });
    event(1, { type: 'GoalTransitioned', goal: id, from: 'dispatched', to: 'running' });
    event(3, { type: 'RunClosed', run: runId, goal: id, plant, status: 'success', cost_source: 'provider', cost_usd: 0.0123, detail: 'closed by driver' });
    event(4, { type: 'GoalTransitioned', goal: id, from: 'running', to: 'completed' });
    event(4, { type: 'GoalTransitioned', goal: id, from: 'completed', to: 'closed' });
    event(4, { type: 'GoalClosed', goal: id, reason: 'success' });
    ledger.push(line({ id, type: 'build', plant, priority: 50, closed_reason: 'success', closed_at: at(4), submitted_at: at(0) }));
    ids.push(id);
  }
  fs.appendFileSync(path.join(eventsDir, 'coordinator.jsonl'), events.join(''), { mode: 0o600 });
  fs.appendFileSync(path.join(goalsDir, '.closed'), ledger.join(''), { mode: 0o600 });
  fs.writeFileSync(counterFile, `${first + count - 1}\n`);
  return ids;
}
