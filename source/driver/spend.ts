import fs from 'node:fs';
import type { GardenConfig, GardenPaths } from '../garden/index.js';
import { readRunStream, runEventsFile, storeOf } from '../store/index.js';
import type { RunRecord } from '../contracts/index.js';
import { getDriverPlugin } from './plugins/index.js';
import type { SpendMeter } from './plugins/types.js';
import { parseStreamLine } from './dispatch.js';
import { sumSpends } from './pricing.js';

/**
 * A live run's spend so far, read from its `events.jsonl` with its driver's
 * spend meter (docs/budget/level2.md, "Following spend"): what any process
 * (`pak2 budget`, the server) can know of a run another process follows.
 * Every launch of the run (main turn, fresh-session retry, reflection) is
 * metered; their spends add up.
 *
 * @returns the spend in USD and its source; `unknown` (0) for a driver with no meter or no figure yet.
 */
export function streamSpend(run: Pick<RunRecord, 'driver' | 'model'>, eventsFile: string, config?: Pick<GardenConfig, 'drivers'>): SpendMeter['spend'] {
  if (!getDriverPlugin(run.driver, config)?.spendMeter) return { usd: 0, source: 'unknown' };
  let text: string;
  try {
    text = fs.readFileSync(eventsFile, 'utf8');
  } catch {
    return { usd: 0, source: 'unknown' };
  }
  return streamTextSpend(run, text, config);
}

/**
 * {@link streamSpend} of a run of the garden at `paths`, its stream read
 * where it is held: the store's copy on a garden with one (the run may be
 * another machine's), else the run directory's events.jsonl.
 */
export async function runStreamSpend(paths: GardenPaths, run: Pick<RunRecord, 'id' | 'driver' | 'model'>, config?: Pick<GardenConfig, 'drivers'>): Promise<SpendMeter['spend']> {
  if (!storeOf(paths)) return streamSpend(run, runEventsFile(paths, run.id), config);
  if (!getDriverPlugin(run.driver, config)?.spendMeter) return { usd: 0, source: 'unknown' };
  return streamTextSpend(run, (await readRunStream(paths, run.id, 'events')).toString('utf8'), config);
}

/** {@link streamSpend} of a stream's text. */
export function streamTextSpend(run: Pick<RunRecord, 'driver' | 'model'>, text: string, config?: Pick<GardenConfig, 'drivers'>): SpendMeter['spend'] {
  const plugin = getDriverPlugin(run.driver, config);
  if (!plugin?.spendMeter) return { usd: 0, source: 'unknown' };
  const done: SpendMeter['spend'][] = [];
  let meter = plugin.spendMeter({ model: run.model });
  for (const raw of text.split('\n')) {
    if (!raw.trim()) continue;
    const line = parseStreamLine(raw) as { type?: unknown };
    // pak2's phase markers start a new launch: its meter starts at zero.
    if (typeof line.type === 'string' && line.type.startsWith('pak2.')) {
      done.push(meter.spend);
      meter = plugin.spendMeter({ model: run.model });
      continue;
    }
    meter.observe(line);
  }
  return sumSpends([...done, meter.spend]);
}
