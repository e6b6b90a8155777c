import fs from 'node:fs';
import path from 'node:path';
import type { GoalRecord, PlantRecord } from '../contracts/index.js';
import { gardenRelative, type GardenPaths } from '../garden/index.js';
import { indexMarkdown, plantDir, seedFile } from '../store/index.js';

/** Prompt section headings, in the order seed 002 ("Prompt structure") fixes. */
export const PROMPT_HEADINGS = {
  motivation: '# Garden Motivation',
  seed: '# Your Seed',
  supplements: '# Goal Supplements',
  comments: '# Goal Comments',
  conversation: '# Conversation',
  memory: '# Your Memory',
  skills: '# Your Skills',
  knowledge: '# Your Knowledge',
  run: '# Your Current Run',
  tend: '# Tend Context',
  commission: '# Plant Commission Context',
  guard: '# Guard',
  acceptance: '# Acceptance Criteria',
  task: '# Task',
} as const;

/**
 * The run block's line on asking the operator (docs/runners/level2.md,
 * "An agent's comments"): every run gets it, local or on a runner (both set
 * `PAK2_GOAL_ID`), whether or not its goal has comments yet.
 */
export const ASK_LINE =
  '- To ask the operator a question you cannot go on without: pak2 comment "$PAK2_GOAL_ID" --blocking --wait "YOUR QUESTION" — your goal waits, blocked, and the answer is printed; with no answer within 10 minutes it exits 1: end your turn saying what you need, and the next run of this goal is given the answer.';

/** The question asked by the reflection continuation (seed 000, "Reflection"). */
export const REFLECTION_PROMPT = [
  'Reflection: the task is finished. In a few sentences of plain text, answer "what was learned?"',
  'Say what you learned that the next run in this garden should know (about the code, the tools, the task, or your own approach),',
  'not a summary of what you did. Do not use any tools.',
].join(' ');

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Inputs of {@link buildPrompt}. */
export interface PromptInput {
  paths: GardenPaths;
  goal: GoalRecord;
  runId: string;
  plant: PlantRecord;
  /** Absolute run directory. */
  runDirectory: string;
  /** The agent's working directory. */
  workingDirectory: string;
  /** Extra context blocks, already rendered, placed between the run block and the task. */
  extraBlocks?: { tend?: string; commission?: string; supplements?: string; comments?: string; conversation?: string; guard?: string; acceptance?: string };
  /** The reply directory, named in the run block so the agent can leave reply notes there. */
  replyDirectory?: string;
  /** The run's own worktree, when it has one (docs/landing/level2.md): its branch and what it started from. */
  worktree?: { branch: string; base_branch: string; base_commit: string };
}

/** True when the plant has no memory yet: no `memory/MEMORY.md`, or a blank one (seed 002). */
export function isBlankMemory(paths: GardenPaths, plant: string): boolean {
  const memory = readText(path.join(plantDir(paths, plant), 'memory', 'MEMORY.md'));
  return memory === undefined || memory.trim() === '';
}

/**
 * Assembles a run's prompt in the order of seed 002, "Prompt structure":
 * motivation; the seed (first blank-memory run) or memory in full plus skill
 * and knowledge indexes; the current run; tend and commission context when
 * given; goal supplements (frozen in the dispatch packet) and the
 * conversation so far, on the routes that have them; the guard and the
 * goal's acceptance criteria when it has them; the task; the closing
 * working-directory line.
 */
export function buildPrompt(input: PromptInput): string {
  const { paths, goal, plant } = input;
  const sections: string[] = [];
  sections.push(`${PROMPT_HEADINGS.motivation}\n\n${(readText(paths.motivationFile) ?? '(this garden has no MOTIVATION.md)').trim()}`);

  const dir = plantDir(paths, plant.name);
  if (isBlankMemory(paths, plant.name)) {
    const seed = readText(seedFile(paths, plant.seed)) ?? `(seed ${plant.seed} not found at ${seedFile(paths, plant.seed)})`;
    sections.push(`${PROMPT_HEADINGS.seed}\n\n${seed.trim()}`);
  } else {
    const memory = readText(path.join(dir, 'memory', 'MEMORY.md')) ?? '';
    sections.push(`${PROMPT_HEADINGS.memory}\n\n${memory.trim()}`);
    sections.push(`${PROMPT_HEADINGS.skills}\n\n${indexMarkdown(path.join(dir, 'skills'), 'skills').join('\n')}`);
    sections.push(`${PROMPT_HEADINGS.knowledge}\n\n${indexMarkdown(path.join(dir, 'knowledge'), 'knowledge').join('\n')}`);
  }

  sections.push(
    [
      PROMPT_HEADINGS.run,
      '',
      `- Run ID: ${input.runId}`,
      `- Goal ID: ${goal.id}`,
      `- Goal type: ${goal.type}`,
      `- Goal priority: ${goal.priority}`,
      `- Plant: ${plant.name}`,
      // In an adopted repository plants live under [garden].home (`.pak2/plants/`), not `plants/`: say where.
      ...(paths.homeDir !== paths.gardenRoot ? [`- Plant directory: ${gardenRelative(paths, dir)}/ (memory/MEMORY.md, skills/, knowledge/; pak2's files in this repository are under ${gardenRelative(paths, paths.homeDir)}/)`] : []),
      `- Run directory: ${input.runDirectory}`,
      ...(input.replyDirectory ? [`- Reply notes for the operator go in: ${input.replyDirectory}`] : []),
      ASK_LINE,
      ...(input.worktree
        ? [
            `- Worktree: your own git worktree on branch ${input.worktree.branch}, from ${input.worktree.base_branch} at ${input.worktree.base_commit.slice(0, 12)}. Other agents work in worktrees of their own. When you finish, pak2 commits what you changed here (your own commits are kept) and lands it on ${input.worktree.base_branch} after it is verified on the merged result.`,
          ]
        : []),
    ].join('\n'),
  );
  if (input.extraBlocks?.tend) sections.push(`${PROMPT_HEADINGS.tend}\n\n${input.extraBlocks.tend.trim()}`);
  if (input.extraBlocks?.commission) sections.push(`${PROMPT_HEADINGS.commission}\n\n${input.extraBlocks.commission.trim()}`);
  if (input.extraBlocks?.supplements) sections.push(`${PROMPT_HEADINGS.supplements}\n\n${input.extraBlocks.supplements.trim()}`);
  if (input.extraBlocks?.comments) sections.push(`${PROMPT_HEADINGS.comments}\n\n${input.extraBlocks.comments.trim()}`);
  if (input.extraBlocks?.conversation) sections.push(`${PROMPT_HEADINGS.conversation}\n\n${input.extraBlocks.conversation.trim()}`);
  if (input.extraBlocks?.guard) sections.push(`${PROMPT_HEADINGS.guard}\n\n${input.extraBlocks.guard.trim()}`);
  if (input.extraBlocks?.acceptance) sections.push(`${PROMPT_HEADINGS.acceptance}\n\n${input.extraBlocks.acceptance.trim()}`);
  sections.push(`${PROMPT_HEADINGS.task}\n\n${goal.body.trim()}`);
  sections.push(`Your working directory is ${input.workingDirectory}. Begin.`);
  return `${sections.join('\n\n')}\n`;
}
