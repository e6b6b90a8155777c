import type { GardenConfig, GardenPaths } from '../garden/index.js';
import { listInbox, OpenGoalScanner, type InboxNote } from '../store/index.js';
import { QuestionReader } from './questions.js';
import type { QuestionView } from './types.js';

/** What the workbench's inbox pane lists (docs/workbench/level2.md, "Panes"): open questions, oldest first, then reply notes, newest first. */
export interface InboxView {
  questions: QuestionView[];
  notes: InboxNote[];
  /** Unreadable goal files or threads, one line each. */
  problems: string[];
}

/**
 * The inbox as the pane shows it, read once (`pak2 inbox`): the open
 * questions of the blocked goals and the reply notes (replies, startup
 * notes, retrospective reports), each note's body cut to `maxBody`
 * characters. Through the store functions: a file or a PostgreSQL garden.
 */
export async function loadInbox(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, maxBody = 4000): Promise<InboxView> {
  const problems: string[] = [];
  const scan = await new OpenGoalScanner(paths).scan();
  problems.push(...scan.problems.map((p) => `${p.file}: ${p.message}`));
  const questions = await new QuestionReader(paths).read(scan.goals, problems);
  return { questions: [...questions], notes: await listInbox(paths, config, maxBody), problems };
}
