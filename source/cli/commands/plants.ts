import fs from 'node:fs';
import type { Command } from 'commander';
import { PLANT_NAME_PATTERN, type PlantRecord } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { activeThreadsFile, archivePlant, commissionPlant, listPlants, readActiveThreads, readPlant, StoreError } from '../../store/index.js';
import type { GardenPaths } from '../../garden/index.js';
import { submitPlantCommissionGoal } from '../../submit/plant-commission.js';
import { age, sanitize, table, truncateColumns } from '../../format.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

const NAME_RULE = 'use lower-case letters, digits and inner hyphens, starting with a letter, e.g. gardener';

/** @throws UserError INVALID_PLANT_NAME naming the argument (exit 2). */
function checkName(name: string, argument: string): void {
  if (!PLANT_NAME_PATTERN.test(name)) {
    throw new UserError(`${argument} ${JSON.stringify(name)}: INVALID_PLANT_NAME (${NAME_RULE})`, { code: 'INVALID_PLANT_NAME' });
  }
}

/** The seeds of a garden: `seeds/<seed>.md` with a valid name, sorted. */
function seedNames(paths: GardenPaths): string[] {
  try {
    return fs
      .readdirSync(paths.seedsDir)
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.slice(0, -3))
      .filter((s) => PLANT_NAME_PATTERN.test(s))
      .sort();
  } catch {
    return [];
  }
}

/** The names of a garden's plants, for "no such plant" errors. */
async function plantNames(paths: GardenPaths): Promise<string> {
  const { plants } = await listPlants(paths);
  return plants.length ? plants.map((p) => p.name).join(', ') : 'none yet';
}

/** Reads a plant, turning PLANT_NOT_FOUND into a one-line error naming the argument and the plants there are. */
async function plantOf(paths: GardenPaths, name: string, argument: string): Promise<PlantRecord> {
  checkName(name, argument);
  try {
    return await readPlant(paths, name);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'PLANT_NOT_FOUND') {
      throw new UserError(`${argument} ${name}: no such plant in this garden (plants: ${await plantNames(paths)})`, { code: 'PLANT_NOT_FOUND' });
    }
    throw error;
  }
}

/** `pak2 plants`, `pak2 plant commission|propose|archive`, `pak2 threads PLANT`. */
export function registerPlantCommands(program: Command, io: CliIO): void {
  program
    .command('plants')
    .description('list plants: name, seed, status, when commissioned, active threads')
    .option('--json', 'print the plant records (with their thread counts) as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const { plants, problems } = await listPlants(garden.paths);
      for (const problem of problems) io.err(`pak2: skipped ${problem.message}`);
      const rows: { plant: PlantRecord; threads: number | undefined }[] = [];
      for (const plant of plants) {
        let threads: number | undefined;
        try {
          threads = (await readActiveThreads(garden.paths, plant.name)).length;
        } catch (error) {
          io.err(`pak2: ${(error as Error).message}`);
        }
        rows.push({ plant, threads });
      }
      if (opts.json) return printJson(io, rows.map((r) => ({ ...r.plant, threads: r.threads ?? null })));
      if (rows.length === 0) return io.out('no plants yet: pak2 plant commission NAME --seed SEED');
      io.out(
        table(
          ['NAME', 'SEED', 'STATUS', 'COMMISSIONED', 'THREADS'],
          rows.map(({ plant, threads }) => [plant.name, plant.seed, plant.status, `${plant.commissioned_at.slice(0, 10)} (${age(plant.commissioned_at)})`, threads === undefined ? '?' : String(threads)]),
        ),
      );
    });

  const plant = program.command('plant').description('commission or archive a plant');
  plant
    .command('commission')
    .description('commission a plant from seeds/<SEED>.md (creates plants/<NAME>/)')
    .argument('<name>', 'the new plant\'s name')
    .requiredOption('--seed <seed>', 'the seed: seeds/<seed>.md')
    .option('--description <text>', 'one line about the plant')
    .action(async (name: string, opts: { seed: string; description?: string }, command: Command) => {
      const garden = gardenOf(command, io);
      checkName(name, 'NAME');
      const seeds = seedNames(garden.paths);
      if (!PLANT_NAME_PATTERN.test(opts.seed) || !seeds.includes(opts.seed)) {
        throw new UserError(`--seed ${JSON.stringify(opts.seed)}: no such seed in ${garden.paths.seedsDir} (seeds: ${seeds.length ? seeds.join(', ') : 'none'})`, { code: 'SEED_NOT_FOUND' });
      }
      if (opts.description !== undefined && (!opts.description.trim() || /[\r\n]/.test(opts.description))) {
        throw new UserError('--description: give one non-empty line');
      }
      try {
        const record = await commissionPlant(garden.paths, name, opts.seed, opts.description ? { description: opts.description } : {});
        io.out(`commissioned ${record.name} (seed ${record.seed})`);
      } catch (error) {
        if (error instanceof StoreError && error.code === 'PLANT_EXISTS') {
          throw new UserError(`NAME ${name}: a plant of that name already exists (${error.file})`, { exitCode: 1, code: 'PLANT_EXISTS' });
        }
        throw error;
      }
    });

  plant
    .command('propose')
    .description('queue a commission goal: the gardener commissions NAME from SEED and queues its first bounded goal')
    .argument('<name>', "the new plant's name")
    .requiredOption('--seed <seed>', 'the seed: seeds/<seed>.md')
    .requiredOption('--purpose <text>', 'what the new plant is for')
    .requiredOption('--first-type <type>', "the first goal's type, e.g. build")
    .requiredOption('--first-body <text>', "the first goal's task")
    .action(async (name: string, opts: { seed: string; purpose: string; firstType: string; firstBody: string }, command: Command) => {
      const garden = gardenOf(command, io);
      checkName(name, 'NAME');
      const seeds = seedNames(garden.paths);
      if (!PLANT_NAME_PATTERN.test(opts.seed) || !seeds.includes(opts.seed)) {
        throw new UserError(`--seed ${JSON.stringify(opts.seed)}: no such seed in ${garden.paths.seedsDir} (seeds: ${seeds.length ? seeds.join(', ') : 'none'})`, { code: 'SEED_NOT_FOUND' });
      }
      try {
        const goal = await submitPlantCommissionGoal(garden, { plant: name, seed: opts.seed, purpose: opts.purpose, firstGoal: { type: opts.firstType, body: opts.firstBody } });
        io.out(goal.id);
      } catch (error) {
        if (error instanceof UserError) {
          // Name the flag the operator typed.
          const message = error.message
            .replace(/^plant (?=\S+: (a plant of that name already exists|not a valid plant name))/, 'NAME ')
            .replace(/^seed /, '--seed ')
            .replace(/^purpose:/, '--purpose:')
            .replace(/^first-type /, '--first-type ')
            .replace(/^first-body:/, '--first-body:');
          throw new UserError(message, { exitCode: /already exists/.test(message) ? 1 : 2 });
        }
        throw error;
      }
    });

  plant
    .command('archive')
    .description('archive a plant (its files stay; it shows as archived)')
    .argument('<name>', 'the plant')
    .action(async (name: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const record = await plantOf(garden.paths, name, 'NAME');
      if (record.status === 'archived') throw new UserError(`NAME ${name}: already archived (${record.archived_at ?? 'earlier'})`, { exitCode: 1 });
      await archivePlant(garden.paths, name);
      io.out(`archived ${name}`);
    });

  program
    .command('threads')
    .description("print a plant's active threads (plants/<plant>/memory/active-threads.json)")
    .argument('<plant>', 'the plant')
    .option('--json', 'print { plant, threads } as JSON')
    .action(async (name: string, opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      await plantOf(garden.paths, name, 'PLANT');
      const threads = await readActiveThreads(garden.paths, name);
      if (opts.json) return printJson(io, { plant: name, threads });
      if (threads.length === 0) return io.out(`no active threads for ${name} (${activeThreadsFile(garden.paths, name)})`);
      const lines = [table(['ID', 'STATUS', 'UPDATED', 'TITLE'], threads.map((t) => [truncateColumns(t.id, 40), t.status, age(t.updated_at), t.title]))];
      for (const t of threads) {
        const extra = [t.next ? `next: ${t.next}` : '', t.goals?.length ? `goals: ${t.goals.join(', ')}` : ''].filter(Boolean);
        if (extra.length) lines.push(`${t.id}  ${extra.join('  ')}`);
      }
      io.out(sanitize(lines.join('\n')));
    });
}
