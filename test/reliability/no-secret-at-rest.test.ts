/**
 * No secret at rest (issue 25, item 4; docs/run/level2.md, "Secrets"): a
 * mixed workload — plain command-driver runs and a guarded run live at once,
 * agents that print an API key from their environment to stdout and stderr
 * (one across the 1 MiB chunk boundary of the redaction, one in its last
 * stderr line before a failing exit), a plant memory that puts it into the
 * prompt, and a webhook subscription with a secret and a token in its URL —
 * then every file under the runtime root and every object of its git history
 * is searched for the planted values. Modes: the runtime root is 0700, the
 * files pak2 writes there 0600.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { isTerminalRunStatus } from '../../source/contracts/index.js';
import { loadGarden, runDir, type Garden } from '../../source/garden/index.js';
import { addSubscription } from '../../source/server/webhooks/index.js';
import { commissionPlant, createGoal, listRuns, readRun, type GoalInput } from '../../source/store/index.js';
import { waitFor } from '../support/garden.js';

const SECRET = 'pak2-planted-9f3c1a7e5b2d4086';
const HOOK_SECRET = 'whsec-planted-41d7c0b9e2a86f35';
const URL_TOKEN = 'urltok-planted-b5e8a1c3f7d92046';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const GIT_ENV = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, ...GIT_ENV } });

const RESULT = JSON.stringify({ type: 'result', status: 'success', text: 'done', cost_usd: 0.01, session_id: 's1', num_turns: 1, usage: { input_tokens: 90, output_tokens: 10 } });
/** A command agent: `script` in the main phase then a result line; the reflection turn answers with the key in its text. */
const agent = (script: string): string[] => [
  'sh',
  '-c',
  `cat >/dev/null; if [ "$PAK2_PHASE" = reflection ]; then printf '{"type":"result","status":"success","text":"I learned %s","cost_usd":0}\\n' "$PAK2_PLANTED_API_KEY"; exit 0; fi\n${script}\necho '${RESULT}'`,
];

async function makeGarden(release: string): Promise<Garden & { root: string }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-secret-'));
  cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
  const drivers: Record<string, string[]> = {
    // Prints the key raw, inside a JSON line, and to stderr: once in a line of its own, once split across the redaction's 1 MiB chunk.
    plain: agent(`echo "key is $PAK2_PLANTED_API_KEY"; printf '{"type":"text","text":"Authorization: %s"}\\n' "$PAK2_PLANTED_API_KEY"; echo "$PAK2_PLANTED_API_KEY" >&2; head -c 1048570 /dev/zero | tr '\\0' a >&2; echo "$PAK2_PLANTED_API_KEY" >&2`),
    // Fails with the key in its last stderr line: the record's error text quotes it.
    failing: ['sh', '-c', 'cat >/dev/null; echo "denied for $PAK2_PLANTED_API_KEY" >&2; exit 3'],
    // The guarded run: prints the key, writes it into a forbidden file (rolled back into rejected.patch), and stays live until released.
    guarded: agent(`echo "guarded $PAK2_PLANTED_API_KEY"; echo "$PAK2_PLANTED_API_KEY" >&2; echo "$PAK2_PLANTED_API_KEY" > leak.txt; while [ ! -e ${JSON.stringify(release)} ]; do sleep 0.05; done`),
  };
  const toml = [
    '[runtime]',
    'root = ".runtime"',
    '[defaults]',
    'driver = "plain"',
    '[coordinator]',
    'interval_seconds = 3600',
    'isolation = "worktree"',
    'max_concurrent_runs = 3',
    ...Object.entries(drivers).map(([name, argv]) => `[drivers.${name}]\ncommand = ${JSON.stringify(argv)}`),
  ].join('\n');
  fs.writeFileSync(path.join(root, 'PAK2.toml'), toml);
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# m\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\nplants/\n');
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'start');
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  // The plant's memory names the key: it reaches the prompt (prompt.md), which the close redacts.
  const memory = path.join(garden.paths.plantsDir, 'gardener', 'memory', 'MEMORY.md');
  fs.mkdirSync(path.dirname(memory), { recursive: true });
  fs.writeFileSync(memory, `# Memory\n\n- The deploy key is ${SECRET}.\n`);
  return { ...garden, root };
}

/** Every regular file under `dir` (symbolic links not followed), with its path. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** The files under `dir` whose bytes contain `needle`, relative to `dir`. */
function filesHolding(dir: string, needle: string): string[] {
  return filesUnder(dir).filter((f) => fs.readFileSync(f).includes(needle)).map((f) => path.relative(dir, f));
}

/** Every object of the runtime repo (reachable or not), its content, for each value found: the objects holding it. */
function historyHolding(rt: string, needles: string[]): Record<string, string[]> {
  const ids = git(rt, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)').trim().split('\n').filter(Boolean);
  const found: Record<string, string[]> = Object.fromEntries(needles.map((n) => [n, []]));
  for (const id of ids) {
    const content = execFileSync('git', ['cat-file', '-p', id], { cwd: rt, maxBuffer: 256 * 1024 * 1024 });
    for (const n of needles) if (content.includes(n)) found[n]!.push(id);
  }
  return found;
}

const mode = (file: string) => (fs.statSync(file).mode & 0o777).toString(8);

describe('no secret at rest', () => {
  it('a mixed workload leaves the planted key in no file of the runtime root and no object of its history; webhook credentials never enter the history', async () => {
    const release = path.join(os.tmpdir(), `pak2-secret-release-${process.pid}-${Date.now()}`);
    cleanups.push(() => fs.rmSync(release, { force: true }));
    const garden = await makeGarden(release);
    const rt = garden.paths.runtimeRoot;
    await addSubscription(garden.paths, { url: `http://127.0.0.1:9/hook?token=${URL_TOKEN}`, events: ['*'], secret: HOOK_SECRET });

    process.env.PAK2_PLANTED_API_KEY = SECRET;
    cleanups.push(() => delete process.env.PAK2_PLANTED_API_KEY);
    const guarded = await createGoal(garden.paths, { type: 'fix', body: 'guarded work', plant: 'gardener', driver: 'guarded', guard: { forbidden_paths: ['leak.txt'], env_passthrough: ['PAK2_PLANTED_API_KEY'] } } as GoalInput);
    const plain = await createGoal(garden.paths, { type: 'fix', body: 'plain work', plant: 'gardener', driver: 'plain' } as GoalInput);
    const failing = await createGoal(garden.paths, { type: 'spike', body: 'failing work', plant: 'gardener', driver: 'failing' } as GoalInput);

    // What the coordinator forwards of the agents' stderr (a terminal, a journal) is redacted too.
    const forwarded: string[] = [];
    const coordinator = new Coordinator({ garden, onStderr: (_run: string, chunk: string) => void forwarded.push(chunk) });
    await coordinator.start();
    try {
      const terminal = async (runId: string) => fs.existsSync(path.join(runDir(garden.paths, runId), 'meta.json')) && isTerminalRunStatus((await readRun(garden.paths, runId)).status);
      // The plain and failing runs close, and their closes commit the runtime tree, while the guarded run is live.
      await waitFor(async () => (await terminal(`${plain.id}-r1`)) && (await terminal(`${failing.id}-r1`)), 20_000);
      await waitFor(() => fs.existsSync(path.join(rt, '.git')) && git(rt, 'log', '--all', '--format=%B').includes(`Run: ${failing.id}-r1`) && git(rt, 'log', '--all', '--format=%B').includes(`Run: ${plain.id}-r1`), 20_000);
      expect((await readRun(garden.paths, `${guarded.id}-r1`)).status).toBe('running');
      expect(fs.readFileSync(path.join(runDir(garden.paths, `${guarded.id}-r1`), 'events.jsonl'), 'utf8')).toContain(SECRET); // live: not yet redacted
      fs.writeFileSync(release, '');
      await coordinator.untilIdle();
    } finally {
      await coordinator.stop();
    }

    const { runs } = await listRuns(garden.paths);
    expect(runs.every((r) => isTerminalRunStatus(r.status))).toBe(true);
    const byGoal = Object.fromEntries(runs.map((r) => [r.goal, r]));
    expect(byGoal[plain.id]!.status).toBe('success');
    expect(byGoal[failing.id]!).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit' });
    // Soft: each way a secret stays at rest is reported on its own.
    expect.soft(byGoal[failing.id]!.outputs?.error).toContain('[REDACTED:PAK2_PLANTED_API_KEY]');
    expect.soft(byGoal[plain.id]!.reflection).toBe('I learned [REDACTED:PAK2_PLANTED_API_KEY]');
    expect.soft(byGoal[guarded.id]!.failure_reason).toBe('scope_violation');
    expect(forwarded.join('')).toContain('[REDACTED:PAK2_PLANTED_API_KEY]');
    expect(forwarded.join('')).not.toContain(SECRET);
    // The key was there, and was replaced: in the stream, the stderr log (across the chunk boundary), the prompt and the rollback patch.
    const plainDir = runDir(garden.paths, `${plain.id}-r1`);
    expect.soft(fs.readFileSync(path.join(plainDir, 'events.jsonl'), 'utf8')).toContain('Authorization: [REDACTED:PAK2_PLANTED_API_KEY]');
    expect.soft(fs.readFileSync(path.join(plainDir, 'stderr.log'), 'utf8').match(/\[REDACTED:PAK2_PLANTED_API_KEY\]/g)).toHaveLength(2);
    expect.soft(fs.readFileSync(path.join(plainDir, 'prompt.md'), 'utf8')).toContain('The deploy key is [REDACTED:PAK2_PLANTED_API_KEY].');
    expect.soft(fs.readFileSync(path.join(runDir(garden.paths, `${guarded.id}-r1`), 'rejected.patch'), 'utf8')).toContain('[REDACTED:PAK2_PLANTED_API_KEY]');

    // Zero hits: every file under the runtime root (its .git included) for the key; the webhook credentials only in the webhook store.
    expect.soft(filesHolding(rt, SECRET)).toEqual([]);
    for (const value of [HOOK_SECRET, URL_TOKEN]) expect.soft(filesHolding(rt, value).every((f) => f.startsWith(`webhooks${path.sep}`))).toBe(true);
    expect.soft(filesHolding(rt, HOOK_SECRET).length).toBeGreaterThan(0);
    // Zero hits in every object of the runtime history.
    expect.soft(historyHolding(rt, [SECRET, HOOK_SECRET, URL_TOKEN])).toEqual({ [SECRET]: [], [HOOK_SECRET]: [], [URL_TOKEN]: [] });
    expect.soft(git(rt, 'log', '--all', '--format=%B')).toContain(`Run: ${guarded.id}-r1`);

    // Modes, set explicitly: the runtime root the owner's alone, and the records, events and logs pak2 writes there.
    expect.soft(mode(rt)).toBe('700');
    for (const file of ['meta.json', 'events.jsonl', 'stderr.log', 'prompt.md']) expect.soft([file, mode(path.join(plainDir, file))]).toEqual([file, '600']);
    expect.soft(mode(garden.paths.coordinatorLog)).toBe('600');
    expect.soft(mode(path.join(garden.paths.goalsDir, `${plain.id}.json`))).toBe('600');
  }, 90_000);
});
