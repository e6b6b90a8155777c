import { readSchedulesState, schedulesFile, StoreError } from '../store/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/**
 * `<runtime-root>/schedules.json` (docs/schedules/level2.md, "State") must
 * read and validate: while it does not, no `[[schedule]]` fires. Fix: move
 * it aside; the next coordinator pass sees every schedule for the first
 * time (a baseline, no catch-up), so nothing is submitted twice.
 */
export async function checkSchedules(ctx: DoctorContext): Promise<Problem[]> {
  const { paths } = ctx.garden;
  const file = schedulesFile(paths);
  try {
    await readSchedulesState(paths);
    return [];
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    const text = error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message;
    const field = /^([\w.[\]-]+): [A-Z_]+ \(/.exec(text)?.[1];
    return [
      {
        check: 'schedules',
        file,
        ...(field && field !== '(document)' ? { field } : {}),
        message: `${text}; no schedule fires while pak2 cannot read it`,
        fix: 'move it aside: the next coordinator pass starts every schedule afresh from then (no catch-up, nothing submitted twice)',
        repair: async (c) => {
          try {
            await readSchedulesState(paths);
            throw new NotFixed('the file reads now; left as it is');
          } catch (again) {
            if (again instanceof NotFixed || !(again instanceof StoreError)) throw again;
          }
          return `moved it to ${await c.aside.move(file)}; every schedule starts afresh at the next coordinator pass`;
        },
      },
    ];
  }
}
