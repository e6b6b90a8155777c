/**
 * An error the operator can act on: a one-line message naming the argument or
 * file (and field), an optional hint, and the process exit code the CLI maps
 * it to (2 for bad arguments or files, 1 for a refused operation).
 */
export class UserError extends Error {
    hint;
    exitCode;
    code;
    constructor(message, options = {}) {
        super(message);
        this.name = 'UserError';
        this.hint = options.hint;
        this.exitCode = options.exitCode ?? 2;
        this.code = options.code;
    }
}
/** True for a Node system error with the given `code` (ENOENT, EEXIST, …). */
export function isErrno(error, code) {
    return typeof error === 'object' && error !== null && error.code === code;
}
//# sourceMappingURL=errors.js.map