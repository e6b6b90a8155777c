import fs from 'node:fs';
import path from 'node:path';
import { GARDEN_NAME_PATTERN } from '../contracts/index.js';
import { UserError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
function gardenNameFor(dir) {
    const base = path
        .basename(path.resolve(dir))
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, '-')
        .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
    return GARDEN_NAME_PATTERN.test(base) ? base : 'garden';
}
/** The PAK2.toml `pak2 init` writes. */
export function initialConfig(name, driver) {
    return [
        '# pak2 garden configuration. Every key is documented in PAK2.toml.example.',
        '',
        '[runtime]',
        '# Goals, runs, events and the inbox live here, apart from authored files.',
        'root = ".runtime"',
        '',
        '[garden]',
        `name = "${name}"`,
        '',
        '[defaults]',
        `driver = "${driver}"`,
        '',
        '[coordinator]',
        'interval_seconds = 60',
        'watchdog_seconds = 300',
        'run_timeout_seconds = 3600',
        'max_concurrent_runs = 1',
        '',
        ...(driver === 'command'
            ? ['# The command driver runs your executable with the prompt on stdin (docs/run/level2.md).', '[drivers.command]', '# command = ["node", "tools/my-agent.mjs"]', '']
            : []),
    ].join('\n');
}
const MOTIVATION = `# Motivation

This garden exists to get real work done on this repository by coding agents,
with every step recorded so a person can see, steer and trust what happened.

Work in small, verifiable steps. Leave the repository better than you found it.
Say plainly what you did not do or could not verify.
`;
/**
 * Creates a fresh garden in `dir` (seed 002, "Startup contract": `pak2 init`):
 * PAK2.toml with a split runtime root, MOTIVATION.md, the shipped seeds/ and a
 * .gitignore for the runtime root. The code stays in the installed package.
 *
 * @throws UserError when `dir` exists and is not empty (only `.git` is
 *   allowed), names a file, or its parent does not exist; for a bad `--name`
 *   or `--driver`.
 * @returns the files written, relative to `dir`.
 */
export function initGarden(dir, options = {}) {
    const root = path.resolve(dir);
    if (fs.existsSync(root)) {
        if (!fs.statSync(root).isDirectory())
            throw new UserError(`DIR ${dir}: exists and is not a directory`);
        // An empty git checkout (only .git) counts as empty: a fresh repository can become a garden.
        if (fs.readdirSync(root).some((name) => name !== '.git'))
            throw new UserError(`DIR ${dir}: not empty; pak2 init only writes into a new or empty directory (one holding only .git is fine)`);
    }
    else {
        const parent = path.dirname(root);
        if (!fs.existsSync(parent) || !fs.statSync(parent).isDirectory())
            throw new UserError(`DIR ${dir}: its parent ${parent} is not an existing directory`);
    }
    const name = options.name ?? gardenNameFor(root);
    if (!GARDEN_NAME_PATTERN.test(name))
        throw new UserError(`--name ${name}: use lower-case letters, digits, '.', '_' and '-'`);
    const driver = options.driver ?? 'claude';
    if (!['claude', 'codex', 'command'].includes(driver))
        throw new UserError(`--driver ${driver}: must be claude, codex or command`);
    if (!fs.existsSync(root))
        fs.mkdirSync(root);
    const written = [];
    const write = (rel, text) => {
        fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
        fs.writeFileSync(path.join(root, rel), text);
        written.push(rel);
    };
    write('PAK2.toml', initialConfig(name, driver));
    write('MOTIVATION.md', MOTIVATION);
    write('.gitignore', '# pak2 runtime state: goals, runs, events (not authored files)\n.runtime/\n');
    fs.cpSync(path.join(PACKAGE_ROOT, 'seeds'), path.join(root, 'seeds'), { recursive: true });
    written.push('seeds/');
    return written;
}
//# sourceMappingURL=init.js.map