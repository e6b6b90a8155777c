import path from 'node:path';
import { commissionMetadataOf, COMMISSION_GOAL_TYPE, GENESIS_TEND_TRIGGER, tendMetadataOf, type CommentRecord, type CommissionMetadata, type GoalRecord } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { shellWord } from '../shell-word.js';

/**
 * The context blocks of the prompt that come from a goal's metadata (seed
 * 002, "Prompt structure" items 4 and 5): `# Tend Context` and
 * `# Plant Commission Context`. They live with the prompt, not with the
 * policies that queue such goals.
 */

/** The `# Tend Context` block for a tend goal's prompt (trigger metadata and origin hints; genesis's first survey included), or undefined without `tend` metadata. */
export function renderTendContext(goal: GoalRecord, paths: GardenPaths): string | undefined {
  if (goal.type !== 'tend') return undefined;
  const meta = tendMetadataOf(goal);
  if (!meta) return undefined;
  const o = meta.origin;
  const lines = [`Trigger: ${meta.trigger}`, `Key: ${meta.key}`];
  if (o.goal) lines.push(`Origin goal: ${o.goal}`);
  if (o.run) lines.push(`Origin run: ${o.run}`);
  if (o.status) lines.push(`Origin status: ${o.status}`);
  if (o.failure_reason) lines.push(`Origin failure reason: ${o.failure_reason}`);
  if (o.error) lines.push(`Origin error: ${o.error}`);
  if (o.goals?.length) {
    lines.push('Queued goals that cannot dispatch:');
    for (const g of o.goals) lines.push(`- ${g.goal}: ${g.reason}`);
  }
  if (meta.trigger === GENESIS_TEND_TRIGGER) lines.push('Origin: pak2 genesis queued this first survey of a new garden; no run has happened here before it.');
  lines.push('', 'Where to look:');
  if (meta.trigger === GENESIS_TEND_TRIGGER) {
    lines.push(
      `- the garden's motivation: ${paths.motivationFile}`,
      `- what the operator wants and what done means: ${path.join(paths.homeDir, 'CHARTER.md')} and ${path.join(paths.homeDir, 'DONE.md')} (if they exist)`,
      ...(goal.assigned_to ? [`- your plant directory, where your memory starts: ${path.join(paths.plantsDir, goal.assigned_to)}`] : []),
      `- the garden's configuration: ${paths.configFile}`,
    );
  }
  if (o.run) {
    const dir = runDir(paths, o.run);
    lines.push(`- the run directory: ${dir}`, `- ${path.join(dir, 'events.jsonl')} (the agent's event stream)`, `- ${path.join(dir, 'stderr.log')} (the agent's stderr)`, `- ${path.join(dir, 'prompt.md')} (the prompt it was given)`);
  }
  if (o.goals?.length) lines.push(`- the goal files in ${paths.goalsDir}`, `- the plants in ${paths.plantsDir} and the drivers in ${paths.configFile}`);
  lines.push(`- the coordinator event log: ${paths.coordinatorLog}`);
  return lines.join('\n');
}


/** The `# Plant Commission Context` block for a commissioning goal's prompt, or undefined without `commission` metadata. */
export function renderCommissionContext(meta: CommissionMetadata | undefined): string | undefined {
  if (!meta) return undefined;
  return [
    `Target plant: ${meta.plant}`,
    `Seed: ${meta.seed} (seeds/${meta.seed}.md)`,
    `Purpose: ${meta.purpose}`,
    '',
    'First bounded-goal handoff contract:',
    `- Queue exactly one first goal, for plant ${meta.plant} only, of type ${meta.first_goal.type}.`,
    '- Keep it bounded: one concrete task the new plant can finish in a single run.',
    `- Its task: ${meta.first_goal.body.replace(/\n/g, '\n  ')}`,
    `- Command: pak2 submit --plant ${meta.plant} --type ${meta.first_goal.type} --body ${shellWord(meta.first_goal.body)}`,
    '- Report the first goal\'s id in your final message.',
  ].join('\n');
}

/** The commission block of a goal: only for `commission` goals that carry metadata. */
export function renderCommissionContextOf(goal: GoalRecord): string | undefined {
  if (goal.type !== COMMISSION_GOAL_TYPE) return undefined;
  return renderCommissionContext(commissionMetadataOf(goal));
}

/** The most recent comments a prompt carries; older ones are counted, not shown. */
export const PROMPT_COMMENTS = 30;

/**
 * The `# Goal Comments` block: the goal's thread so far, oldest first
 * (docs/runners/level2.md, "Comments") — so a run after a blocking question
 * sees the question and its answer. How to comment is said once.
 * Undefined for an empty thread.
 */
export function renderCommentThread(comments: readonly CommentRecord[], goalId: string): string | undefined {
  if (comments.length === 0) return undefined;
  const shown = comments.slice(-PROMPT_COMMENTS);
  const byId = new Map(comments.map((c) => [c.id, c]));
  const lines: string[] = [];
  if (shown.length < comments.length) lines.push(`(${comments.length - shown.length} earlier comments not shown)`, '');
  for (const c of shown) {
    const mark = c.blocking ? ' (blocking question)' : c.answers ? ` (answers ${byId.get(c.answers)?.author ?? 'a question'}'s ${c.answers})` : '';
    lines.push(`- ${c.created_at} ${c.author}${mark} [${c.id}]:`, ...c.body.split('\n').map((l) => `  ${l}`));
  }
  lines.push('', `Post a comment with \`pak2 comment ${goalId} TEXT\`; add \`--blocking\` for a question the goal cannot go on without (it waits, blocked, for the operator's answer).`);
  return lines.join('\n');
}
