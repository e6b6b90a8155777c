import which from 'which';

/** Finds an executable on `env.PATH` (or checks an explicit path); undefined when absent. */
export function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return which.sync(name, { nothrow: true, path: env.PATH ?? '' }) ?? undefined;
}
