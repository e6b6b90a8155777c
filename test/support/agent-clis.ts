/**
 * Where the real agent CLIs are, for the end-to-end tests and the demo: the
 * private package test/agent-clis/ (Claude Code's native platform package and
 * @openai/codex, pinned in its own package-lock.json), whose bin/ directory
 * scripts/agent-clis.mjs fills (the root `npm ci` runs it as `prepare`). The
 * root node_modules/.bin holds neither.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXT = process.platform === 'win32' ? '.cmd' : '';

/** test/agent-clis/bin: put it first on PATH and `claude` and `codex` are the tested CLIs. */
export const AGENT_BIN = path.join(ROOT, 'test', 'agent-clis', 'bin');
/** The real `claude`: a sh script that execs Claude Code's native binary for this platform. */
export const CLAUDE_BIN = path.join(AGENT_BIN, `claude${EXT}`);
/** The real `codex`: a sh script that execs @openai/codex's bin/codex.js. */
export const CODEX_BIN = path.join(AGENT_BIN, `codex${EXT}`);

/** `PATH` with {@link AGENT_BIN} first, then `rest` (default: this process's PATH). */
export function agentPath(rest: string | undefined = process.env.PATH): string {
  return rest ? `${AGENT_BIN}${path.delimiter}${rest}` : AGENT_BIN;
}
