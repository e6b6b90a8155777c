import which from 'which';
/** Finds an executable on `env.PATH` (or checks an explicit path); undefined when absent. */
export function findExecutable(name, env = process.env) {
    return which.sync(name, { nothrow: true, path: env.PATH ?? '' }) ?? undefined;
}
//# sourceMappingURL=which.js.map