import fs from 'node:fs';
import { GOAL_TYPES, PLANT_NAME_PATTERN, type GoalRecord, type GoalType } from '../contracts/index.js';
import { UserError } from '../errors.js';
import { gardenRelative, type Garden } from '../garden/index.js';
import { createGoal, plantDir, readPlant, seedFile, StoreError } from '../store/index.js';
import { COMMISSION_GOAL_TYPE, commissionMetadataOf, type CommissionFirstGoal, type CommissionMetadata } from '../contracts/index.js';
import { shellWord } from '../shell-word.js';

export { COMMISSION_GOAL_TYPE, commissionMetadataOf, type CommissionFirstGoal, type CommissionMetadata } from '../contracts/index.js';
export { renderCommissionContext, renderCommissionContextOf } from '../driver/context-blocks.js';

/**
 * The dedicated later-plant commissioning goal (seed 002, plant_commission.py;
 * docs/plant/level2.md): its constants, its `commission` payload, its task
 * body, and the `# Plant Commission Context` prompt block.
 */

/** The plant that commissions later plants. */
export const COMMISSION_PLANT = 'gardener';
/** Priority of a commissioning goal: above ordinary work (50), below tend (70) and chat (80). */
export const COMMISSION_PRIORITY = 60;

/** What {@link submitPlantCommissionGoal} takes. */
export interface PlantCommissionInput {
  plant: string;
  seed: string;
  purpose: string;
  firstGoal: { type: string; body: string };
}



/** The task body of a commissioning goal; `seedsDir` is the seeds folder as the agent writes it (`seeds`, or `.pak2/seeds` in an adopted repository). */
export function renderCommissionBody(meta: CommissionMetadata, seedsDir = 'seeds'): string {
  return [
    `Commission a new plant ${meta.plant} from seed ${meta.seed}.`,
    '',
    `Purpose: ${meta.purpose}`,
    '',
    'Steps:',
    `1. Read ${seedsDir}/${meta.seed}.md and check that the seed fits the purpose above. If it does not, do not commission; say why in your final message.`,
    `2. Commission the plant: pak2 plant commission ${meta.plant} --seed ${meta.seed}`,
    `3. Queue exactly one bounded first goal for it: pak2 submit --plant ${meta.plant} --type ${meta.first_goal.type} --body ${shellWord(meta.first_goal.body)}`,
    '4. Report the new goal id in your final message.',
  ].join('\n');
}



/**
 * Queues a dedicated later-plant commissioning goal for the gardener (seed
 * 002, submit.py `submit_plant_commission_goal`; docs/plant/level2.md):
 * type `commission`, priority 60, with the `commission` metadata in the record.
 *
 * @throws UserError naming the field: `plant` (not a valid name, or already
 *   exists), `seed` (no `seeds/<seed>.md`), `purpose` (empty), `first-type`
 *   (not a goal type), `first-body` (empty), or `gardener` missing / not active.
 */
export async function submitPlantCommissionGoal(garden: Garden, input: PlantCommissionInput, now: Date = new Date()): Promise<GoalRecord> {
  const { paths } = garden;
  if (!PLANT_NAME_PATTERN.test(input.plant)) throw new UserError(`plant ${JSON.stringify(input.plant)}: not a valid plant name (lower-case letters, digits and inner hyphens, starting with a letter)`);
  if (fs.existsSync(plantDir(paths, input.plant))) throw new UserError(`plant ${input.plant}: a plant of that name already exists`);
  if (!PLANT_NAME_PATTERN.test(input.seed) || !fs.existsSync(seedFile(paths, input.seed))) throw new UserError(`seed ${JSON.stringify(input.seed)}: no such seed (${gardenRelative(paths, paths.seedsDir)}/${input.seed}.md does not exist)`);
  if (!input.purpose.trim()) throw new UserError('purpose: empty');
  if (!(GOAL_TYPES as readonly string[]).includes(input.firstGoal.type)) throw new UserError(`first-type ${JSON.stringify(input.firstGoal.type)}: must be one of ${GOAL_TYPES.join(', ')}`);
  if (!input.firstGoal.body.trim()) throw new UserError('first-body: the first goal\'s task is empty');
  try {
    const gardener = await readPlant(paths, COMMISSION_PLANT);
    if (gardener.status !== 'active') throw new UserError(`plant ${COMMISSION_PLANT}: the plant is ${gardener.status}; nobody can commission`);
  } catch (error) {
    if (error instanceof StoreError) throw new UserError(`plant ${COMMISSION_PLANT}: ${error.message}`);
    throw error;
  }
  const commission: CommissionMetadata = {
    plant: input.plant,
    seed: input.seed,
    purpose: input.purpose.trim(),
    first_goal: { type: input.firstGoal.type as GoalType, body: input.firstGoal.body.trim() },
  };
  return createGoal(
    paths,
    {
      type: COMMISSION_GOAL_TYPE,
      plant: COMMISSION_PLANT,
      body: renderCommissionBody(commission, gardenRelative(paths, paths.seedsDir)),
      priority: COMMISSION_PRIORITY,
      title: `commission ${input.plant}`,
      commission,
    },
    now,
  );
}
