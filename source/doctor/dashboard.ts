import { listDashboardInvocations, readDashboardInvocation, storeOf } from '../store/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** The field a `<where>: <field>: CODE (…)` message names, when it names one. */
function fieldOf(message: string, where: string): string | undefined {
  const text = message.startsWith(`${where}: `) ? message.slice(where.length + 2) : message;
  const field = /^([\w.[\]-]+): [A-Z_]+ \(/.exec(text)?.[1];
  return field && field !== '(document)' ? field : undefined;
}

/**
 * `<runtime-root>/dashboard/invocations/<id>.json` (docs/dashboard/level2.md,
 * "Invocation records"; seed 002: validate.py validates them): each must
 * read and validate, and be named by its id. A damaged one is a finding
 * naming the file and field. Fix (a file garden): move it aside; nothing
 * reads a record to decide anything, so no other state changes. On a store
 * the damaged document is only named.
 */
export async function checkDashboardInvocations(ctx: DoctorContext): Promise<Problem[]> {
  const { paths } = ctx.garden;
  const onStore = Boolean(storeOf(paths));
  const { problems } = await listDashboardInvocations(paths);
  return problems.map(({ file, message }) => {
    const field = fieldOf(message, file);
    const text = message.startsWith(`${file}: `) ? message.slice(file.length + 2) : message;
    const id = /([^/]+)\.json$/.exec(file)?.[1];
    return {
      check: 'dashboard',
      file,
      ...(field ? { field } : {}),
      message: `${text}; not a valid dashboard invocation record`,
      ...(onStore
        ? {}
        : {
            fix: 'move it aside (nothing else reads it)',
            repair: async (c: DoctorContext) => {
              // Re-checked just before acting: a record rewritten meanwhile is left as it is.
              const now = id ? await readDashboardInvocation(paths, id).then((r) => (r ? 'reads' : 'gone'), () => 'damaged') : 'damaged';
              if (now === 'reads') throw new NotFixed('the record reads now; left as it is');
              if (now === 'gone') throw new NotFixed('the file is gone');
              return `moved it to ${await c.aside.move(file)}`;
            },
          }),
    } satisfies Problem;
  });
}
