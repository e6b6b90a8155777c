/**
 * `npm run demo`: a working demo garden, without network. Creates
 * `demo-garden/` (init + genesis) on first use, or queues one more goal when it
 * exists, starts pak2's scripted model server on 127.0.0.1, points the real
 * Claude Code CLI (test/agent-clis, which `npm ci` installs) at it, and opens the
 * workbench (in a terminal) or runs the coordinator headless until the queue
 * is empty (`--no-ui`, or no terminal). Then prints the runs and the last run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REFLECTION_PROMPT } from '../source/driver/prompt.js';
import { agentPath, CLAUDE_BIN } from '../test/support/agent-clis.js';
import { startModelServer } from '../test/support/model-server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'pak2.js');
const gardenDir = path.resolve(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? path.join(root, 'demo-garden'));

function pak2(args: string[], env: NodeJS.ProcessEnv, capture = false, terminal = false): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: [terminal ? 'inherit' : 'ignore', capture ? 'pipe' : 'inherit', 'inherit'] });
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout }));
  });
}

if (!fs.existsSync(CLAUDE_BIN)) {
  process.stderr.write(`demo: ${path.relative(process.cwd(), CLAUDE_BIN)} is missing; npm ci installs it (or run: node scripts/agent-clis.mjs)\n`);
  process.exit(1);
}

const claudeConfig = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-demo-claude-'));
// The scripted model: the survey writes the gardener's memory; chat gets a reply; any other
// goal gets an honest answer, since this model can only say what its script says.
const server = await startModelServer({
  turns: [
    {
      match: 'Survey this garden',
      text: 'I will record what I found in my memory.',
      toolCall: {
        writeFile: {
          path: 'plants/gardener/memory/MEMORY.md',
          content: '# Gardener memory\n\n- This is the pak2 demo garden.\n- The model behind it is a scripted server on 127.0.0.1.\n',
        },
      },
    },
    { text: 'Done: I surveyed the garden and wrote plants/gardener/memory/MEMORY.md.\n\nNext goals: add a README; add tests; set up CI.' },
    { match: REFLECTION_PROMPT.slice(0, 40), text: 'I learned that in this demo garden the model is scripted: only the survey changes files.' },
    { match: "Reply to the operator's message", text: 'Hello from the demo garden. The model answering you is a scripted server, so this is all it can say.' },
    { match: '# Task', text: 'This demo garden runs on a scripted model: I read the task, but this model changes nothing for it. Point pak2 at a real claude or codex to get the work done.' },
  ],
});

const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: agentPath(),
  ANTHROPIC_BASE_URL: server.url,
  ANTHROPIC_API_KEY: 'demo-key-not-secret',
  CLAUDE_CONFIG_DIR: claudeConfig,
  CLAUDE_CODE_MAX_RETRIES: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
};

let code = 0;
try {
  if (!fs.existsSync(path.join(gardenDir, 'PAK2.toml'))) {
    process.stdout.write(`\n$ pak2 init ${path.relative(process.cwd(), gardenDir) || '.'} --driver claude\n`);
    if ((await pak2(['init', gardenDir, '--driver', 'claude'], env)).code !== 0) throw new Error('init failed');
    process.stdout.write('\n$ pak2 genesis\n');
    if ((await pak2(['genesis', '--garden', gardenDir], env)).code !== 0) throw new Error('genesis failed');
  } else {
    const body = 'Survey the garden again and refresh your memory.';
    process.stdout.write(`\n$ pak2 submit --plant gardener --type build --body "${body}"\n`);
    await pak2(['submit', '--garden', gardenDir, '--plant', 'gardener', '--type', 'build', '--body', body], env);
  }
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY) && !process.env.CI && !process.argv.includes('--no-ui');
  if (interactive) {
    // The workbench: watch the goal run, press enter on it for cost and reflection, n for a new goal, q to quit.
    process.stdout.write(`\n$ pak2   (the workbench; claude → scripted model server at ${server.url}; q quits)\n`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    code = (await pak2(['--garden', gardenDir], env, false, true)).code;
  } else {
    process.stdout.write(`\n$ pak2 cycle --no-ui --until-idle   (claude → scripted model server at ${server.url})\n`);
    code = (await pak2(['cycle', '--no-ui', '--until-idle', '--garden', gardenDir], env)).code;
  }
  process.stdout.write('\n$ pak2 runs\n');
  const runs = await pak2(['runs', '--json', '--garden', gardenDir], env, true);
  await pak2(['runs', '--garden', gardenDir], env);
  const last = (JSON.parse(runs.stdout) as { id: string }[]).at(-1);
  if (last) {
    process.stdout.write(`\n$ pak2 show ${last.id}\n`);
    await pak2(['show', last.id, '--garden', gardenDir], env);
  }
  process.stdout.write(`\nThe garden is in ${gardenDir}; try: node bin/pak2.js goals --garden ${path.relative(process.cwd(), gardenDir) || '.'}\n`);
} finally {
  await server.close();
  fs.rmSync(claudeConfig, { recursive: true, force: true });
}
process.exitCode = code;
