import path from 'node:path';
import { loadGarden } from '../garden/index.js';
/**
 * Loads the garden a command acts on: `--garden DIR` exactly, else the
 * nearest ancestor of the working directory holding PAK2.toml.
 *
 * @throws UserError naming the directory or PAK2.toml problem.
 */
export function gardenOf(command, io) {
    const dir = command.optsWithGlobals().garden;
    return dir ? loadGarden(path.resolve(io.cwd, dir)) : loadGarden(io.cwd, { search: true });
}
/** Prints `value` as pretty JSON. */
export function printJson(io, value) {
    io.out(JSON.stringify(value, null, 2));
}
//# sourceMappingURL=context.js.map