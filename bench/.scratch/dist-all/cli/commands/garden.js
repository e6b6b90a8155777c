import path from 'node:path';
import { genesis, initGarden } from '../../lifecycle/index.js';
import { gardenOf, printJson } from '../context.js';
/** `pak2 init DIR` and `pak2 genesis` (seed 002, "Startup contract"). */
export function registerGardenCommands(program, io) {
    program
        .command('init')
        .description('create a new garden in DIR (which must be new or empty)')
        .argument('<dir>', 'the directory to create the garden in')
        .option('--name <name>', '[garden].name (default: the directory name)')
        .option('--driver <driver>', '[defaults].driver: claude, codex or command', 'claude')
        .action((dir, opts) => {
        const root = path.resolve(io.cwd, dir);
        const written = initGarden(root, { ...(opts.name ? { name: opts.name } : {}), driver: opts.driver });
        io.out(`created garden in ${root}: ${written.join(', ')}`);
        io.out(`next: cd ${dir} && pak2 genesis`);
    });
    program
        .command('genesis')
        .description('set up the garden: runtime directories, the gardener plant, its first goal (no dispatch)')
        .option('--json', 'print what was done as JSON')
        .action(async (opts, command) => {
        const garden = gardenOf(command, io);
        const report = await genesis(garden, io.env);
        if (opts.json)
            return printJson(io, report);
        for (const warning of report.warnings)
            io.err(`warning: ${warning}`);
        if (!report.created.length && !report.commissioned.length && !report.queued.length) {
            io.out(`genesis: nothing to do; ${garden.paths.gardenRoot} is already set up`);
            return;
        }
        if (report.created.length)
            io.out(`created ${report.created.join(', ')}`);
        for (const plant of report.commissioned)
            io.out(`commissioned plant ${plant}`);
        for (const goal of report.queued)
            io.out(`queued goal ${goal}`);
        io.out('next: pak2 cycle');
    });
}
//# sourceMappingURL=garden.js.map