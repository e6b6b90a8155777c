/**
 * Smoke tests: the scripted model server against the REAL agent CLIs
 * (test/agent-clis: Claude Code's native binary and @openai/codex). They pin the
 * facts written down in docs/dev/real-clis.md: argv, env, the events each CLI
 * prints and how each fails. Loopback only; no network needed.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLAUDE_BIN as CLAUDE, CODEX_BIN as CODEX } from './agent-clis.js';
import { modelCalls, pickTurn, startModelServer, userTexts, type ModelScript, type ModelServer } from './model-server.js';

const TIMEOUT = 60_000;
const REFLECT = 'PAK2-REFLECTION:';

// ------------------------------------------------------------------ helpers

type Ev = Record<string, any>;
interface RunResult {
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
	events: Ev[];
	ms: number;
}

/** The test process's env minus anything that would steer a CLI elsewhere. */
function baseEnv(): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (/^(ANTHROPIC_|CLAUDE|OPENAI_|CODEX_|IS_SANDBOX$|API_TIMEOUT_MS$|DISABLE_)/.test(k)) continue;
		if (/^(HTTPS?_PROXY|ALL_PROXY|NO_PROXY)$/i.test(k)) continue;
		env[k] = v;
	}
	return env;
}

function parseJsonl(text: string): Ev[] {
	const out: Ev[] = [];
	for (const line of text.split('\n')) {
		const t = line.trim();
		if (!t.startsWith('{')) continue;
		try {
			out.push(JSON.parse(t));
		} catch {
			/* not an event */
		}
	}
	return out;
}

interface RunOpts {
	cwd: string;
	env: NodeJS.ProcessEnv;
	/** Written to stdin, which is then closed. Undefined: stdin is /dev/null. */
	stdin?: string;
	timeoutMs?: number;
	/** Called for every complete stdout event; may return a signal to send to the process group. */
	onEvent?: (ev: Ev, child: { kill(sig: NodeJS.Signals): void }) => void;
}

const live = new Set<number>();

function run(cmd: string, args: string[], opts: RunOpts): Promise<RunResult> {
	const started = Date.now();
	return new Promise((resolve, reject) => {
		// detached: the CLI leads its own process group, as pak2 runs it.
		const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
		const pid = child.pid!;
		live.add(pid);
		const group = { kill: (sig: NodeJS.Signals) => { try { process.kill(-pid, sig); } catch { /* gone */ } } };
		let stdout = '';
		let stderr = '';
		let pending = '';
		child.stdout!.on('data', (d: Buffer) => {
			stdout += d.toString();
			pending += d.toString();
			let nl: number;
			while ((nl = pending.indexOf('\n')) >= 0) {
				const line = pending.slice(0, nl);
				pending = pending.slice(nl + 1);
				for (const ev of parseJsonl(line)) opts.onEvent?.(ev, group);
			}
		});
		child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
		if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
		const timer = setTimeout(() => group.kill('SIGKILL'), opts.timeoutMs ?? TIMEOUT - 5_000);
		child.on('error', reject);
		child.on('close', (code, signal) => {
			clearTimeout(timer);
			live.delete(pid);
			resolve({ code, signal, stdout, stderr, events: parseJsonl(stdout), ms: Date.now() - started });
		});
	});
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
	for (const pid of live) {
		try {
			process.kill(-pid, 'SIGKILL');
		} catch {
			/* gone */
		}
	}
	while (cleanups.length) await cleanups.pop()!();
});

async function server(script: ModelScript): Promise<ModelServer> {
	const s = await startModelServer(script);
	cleanups.push(() => s.close());
	return s;
}

async function tempDir(label: string): Promise<string> {
	const d = await mkdtemp(path.join(os.tmpdir(), `pak2-${label}-`));
	cleanups.push(() => rm(d, { recursive: true, force: true }));
	return d;
}

/** Pids whose command line contains `needle` (Linux /proc). */
function pidsWith(needle: string): number[] {
	const out: number[] = [];
	for (const name of readdirSync('/proc')) {
		if (!/^\d+$/.test(name)) continue;
		try {
			const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ');
			if (cmdline.includes(needle)) out.push(Number(name));
		} catch {
			/* exited */
		}
	}
	return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ claude

interface ClaudeDirs {
	config: string;
	work: string;
	home: string;
}

async function claudeDirs(): Promise<ClaudeDirs> {
	return { config: await tempDir('claude-config'), work: await tempDir('claude-work'), home: await tempDir('claude-home') };
}

function claudeEnv(s: ModelServer, dirs: ClaudeDirs, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
	return {
		...baseEnv(),
		// A fresh HOME: claude's Bash tool sources ~/.bashrc (via a shell
		// snapshot), and a slow or stuck rc file would make every Bash call hang.
		HOME: dirs.home,
		ANTHROPIC_BASE_URL: s.url,
		ANTHROPIC_API_KEY: 'sk-ant-test-pak2',
		CLAUDE_CONFIG_DIR: dirs.config,
		CLAUDE_CODE_MAX_RETRIES: '0',
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
		DISABLE_AUTOUPDATER: '1',
		DISABLE_TELEMETRY: '1',
		DISABLE_ERROR_REPORTING: '1',
		...extra,
	};
}

const CLAUDE_ARGS = ['-p', '--output-format', 'stream-json', '--verbose'];

function result(events: Ev[]): Ev {
	const r = events.filter((e) => e.type === 'result');
	expect(r).toHaveLength(1);
	return r[0]!;
}

describe('claude (real CLI) against the model server', () => {
	it(
		'writes a file with a real tool call, then resumes the same session for a reflection',
		async () => {
			const s = await server({
				turns: [{ toolCall: { writeFile: { path: 'hello.txt', content: 'hi there\n' } } }, { text: 'done' }, { match: REFLECT, text: 'I learned Z' }],
			});
			const dirs = await claudeDirs();
			const env = claudeEnv(s, dirs);

			const first = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits'], { cwd: dirs.work, env, stdin: 'Please create hello.txt' });
			expect(first.code, first.stderr).toBe(0);
			expect(await readFile(path.join(dirs.work, 'hello.txt'), 'utf8')).toBe('hi there\n');

			const init = first.events[0]!;
			expect(init).toMatchObject({ type: 'system', subtype: 'init', permissionMode: 'acceptEdits', apiKeySource: 'ANTHROPIC_API_KEY' });
			expect(init.cwd).toBe(dirs.work);
			const sessionId: string = init.session_id;
			expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);

			const toolUse = first.events.find((e) => e.type === 'assistant' && e.message.content.some((b: Ev) => b.type === 'tool_use'));
			expect(toolUse?.message.content.find((b: Ev) => b.type === 'tool_use')).toMatchObject({ name: 'Write', input: { file_path: path.join(dirs.work, 'hello.txt') } });
			const toolResult = first.events.find((e) => e.type === 'user' && e.message.content.some((b: Ev) => b.type === 'tool_result'));
			expect(toolResult?.message.content[0].is_error ?? false).toBe(false);

			const r1 = result(first.events);
			expect(r1).toMatchObject({ subtype: 'success', is_error: false, result: 'done', session_id: sessionId, num_turns: 2, permission_denials: [] });
			expect(r1.total_cost_usd).toBeGreaterThan(0);
			expect(r1.usage).toMatchObject({ input_tokens: 200, output_tokens: 20 });
			// the last event is the result; nothing follows it
			expect(first.events.at(-1)!.type).toBe('result');

			// Reflection: same config dir and working directory, --resume <session_id>.
			const second = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits', '--resume', sessionId], {
				cwd: dirs.work,
				env,
				stdin: `${REFLECT} what did you learn?`,
			});
			expect(second.code, second.stderr).toBe(0);
			const r2 = result(second.events);
			expect(r2).toMatchObject({ subtype: 'success', is_error: false, result: 'I learned Z', session_id: sessionId, num_turns: 1 });
			// A resumed run's usage covers that run only, but (since 2.1.2xx) its total_cost_usd is the whole
			// session's, the first process's turns included; its own share is model_usage_since_last_result.
			expect(r2.usage).toMatchObject({ input_tokens: 100, output_tokens: 10 });
			const share = Object.values(r2.model_usage_since_last_result as Record<string, { costUSD: number }>).reduce((sum, m) => sum + m.costUSD, 0);
			expect(share).toBeGreaterThan(0);
			expect(r2.total_cost_usd).toBeCloseTo(r1.total_cost_usd + share, 10);

			// The reflection prompt reached the model, with the earlier turns as history.
			const last = modelCalls(s.requests).at(-1)!;
			expect(userTexts(last).some((t) => t.includes(REFLECT))).toBe(true);
			expect(last.turn).toBe(2);
			expect(last.headers['x-api-key']).toBe('sk-ant-test-pak2');
			expect(last.headers['x-claude-code-session-id']).toBe(sessionId);
		},
		TIMEOUT,
	);

	it(
		'as root: --dangerously-skip-permissions needs IS_SANDBOX=1, and then runs Bash unattended',
		async () => {
			const s = await server({ turns: [{ toolCall: { shell: 'python3 -c "open(\'made-by-bash.txt\',\'w\').write(\'ok\')" || printf ok > made-by-bash.txt' } }, { text: 'done' }] });
			const dirs = await claudeDirs();
			const args = [...CLAUDE_ARGS, '--dangerously-skip-permissions'];
			if (process.getuid?.() === 0) {
				const refused = await run(CLAUDE, args, { cwd: dirs.work, env: claudeEnv(s, dirs), stdin: 'go' });
				expect(refused.code).toBe(1);
				expect(refused.stderr).toContain('--dangerously-skip-permissions cannot be used with root/sudo privileges');
				expect(refused.events).toHaveLength(0);
				expect(modelCalls(s.requests)).toHaveLength(0);
			}
			const ok = await run(CLAUDE, args, { cwd: dirs.work, env: claudeEnv(s, dirs, { IS_SANDBOX: '1' }), stdin: 'go' });
			expect(ok.code, ok.stderr).toBe(0);
			expect(ok.events[0]).toMatchObject({ type: 'system', subtype: 'init', permissionMode: 'bypassPermissions' });
			expect(result(ok.events)).toMatchObject({ subtype: 'success', is_error: false, result: 'done' });
			expect(existsSync(path.join(dirs.work, 'made-by-bash.txt'))).toBe(true);
		},
		TIMEOUT,
	);

	it(
		'acceptEdits denies an arbitrary Bash command; the denial is in result.permission_denials',
		async () => {
			const s = await server({ turns: [{ toolCall: { shell: 'python3 -c "print(1)"' } }, { text: 'done' }] });
			const dirs = await claudeDirs();
			const r = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits'], { cwd: dirs.work, env: claudeEnv(s, dirs), stdin: 'go' });
			expect(r.code).toBe(0);
			const res = result(r.events);
			expect(res).toMatchObject({ subtype: 'success', is_error: false });
			expect(res.permission_denials).toEqual([expect.objectContaining({ tool_name: 'Bash' })]);
		},
		TIMEOUT,
	);

	it(
		'HTTP 500: exit 1, result is_error with api_error_status 500 (subtype is still "success")',
		async () => {
			const s = await server({ mode: 'status500' });
			const dirs = await claudeDirs();
			const r = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits'], { cwd: dirs.work, env: claudeEnv(s, dirs), stdin: 'hello' });
			expect(r.code).toBe(1);
			const res = result(r.events);
			expect(res).toMatchObject({ type: 'result', subtype: 'success', is_error: true, api_error_status: 500, total_cost_usd: 0 });
			expect(res.result).toContain('API Error: 500');
			expect(r.events.find((e) => e.type === 'assistant')).toMatchObject({ error: 'server_error', message: { model: '<synthetic>' } });
			expect(modelCalls(s.requests)).toHaveLength(1); // CLAUDE_CODE_MAX_RETRIES=0
		},
		TIMEOUT,
	);

	it(
		'HTTP 500 with CLAUDE_CODE_MAX_RETRIES=1: one system/api_retry event, two requests',
		async () => {
			const s = await server({ mode: 'status500' });
			const dirs = await claudeDirs();
			const r = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits'], { cwd: dirs.work, env: claudeEnv(s, dirs, { CLAUDE_CODE_MAX_RETRIES: '1' }), stdin: 'hello' });
			expect(r.code).toBe(1);
			const retries = r.events.filter((e) => e.type === 'system' && e.subtype === 'api_retry');
			expect(retries).toEqual([expect.objectContaining({ attempt: 1, max_retries: 1, error_status: 500, error: 'server_error' })]);
			expect(modelCalls(s.requests)).toHaveLength(2);
		},
		TIMEOUT,
	);

	it(
		'HTTP 401: exit 1, result is_error with api_error_status 401 and "Invalid API key"',
		async () => {
			const s = await server({ mode: 'status401' });
			const dirs = await claudeDirs();
			const r = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits'], { cwd: dirs.work, env: claudeEnv(s, dirs), stdin: 'hello' });
			expect(r.code).toBe(1);
			const res = result(r.events);
			expect(res).toMatchObject({ subtype: 'success', is_error: true, api_error_status: 401 });
			expect(res.result).toContain('Invalid API key');
			expect(r.events.find((e) => e.type === 'assistant')).toMatchObject({ error: 'authentication_failed' });
		},
		TIMEOUT,
	);

	it(
		'stalled server: API_TIMEOUT_MS bounds the wait ("Request timed out", api_error_status null); close() is prompt',
		async () => {
			const s = await server({ mode: 'stall' });
			const dirs = await claudeDirs();
			const r = await run(CLAUDE, [...CLAUDE_ARGS, '--permission-mode', 'acceptEdits'], { cwd: dirs.work, env: claudeEnv(s, dirs, { API_TIMEOUT_MS: '2000' }), stdin: 'hello' });
			expect(r.code).toBe(1);
			expect(result(r.events)).toMatchObject({ subtype: 'success', is_error: true, api_error_status: null, result: expect.stringMatching(/^Request timed out/) });
			expect(r.ms).toBeLessThan(30_000);
			const t0 = Date.now();
			await s.close();
			expect(Date.now() - t0).toBeLessThan(2_000);
		},
		TIMEOUT,
	);

});

// ------------------------------------------------------------------ codex

interface CodexDirs {
	home: string;
	work: string;
}

async function codexDirs(): Promise<CodexDirs> {
	return { home: await tempDir('codex-home'), work: await tempDir('codex-work') };
}

function codexEnv(dirs: CodexDirs): NodeJS.ProcessEnv {
	// HOME too: codex runs commands as `bash -lc`, which reads ~/.profile & co.
	return { ...baseEnv(), HOME: dirs.home, CODEX_HOME: dirs.home, PAK2_TEST_MODEL_KEY: 'sk-test-pak2' };
}

/**
 * `-c` flags that point codex at the server as provider "pak2test", plus the
 * two that stop its other outbound traffic (plugin sync to github.com /
 * chatgpt.com, analytics to ab.chatgpt.com).
 */
function codexProvider(s: ModelServer, retries = 0, extra = ''): string[] {
	return [
		'-c',
		'features.plugins=false',
		'-c',
		'analytics.enabled=false',
		'-c',
		'model_provider="pak2test"',
		'-c',
		`model_providers.pak2test={name="pak2test",base_url="${s.url}/v1",wire_api="responses",env_key="PAK2_TEST_MODEL_KEY",request_max_retries=${retries},stream_max_retries=${retries}${extra}}`,
	];
}

describe('codex (real CLI) against the model server', () => {
	it(
		'writes a file with a real tool call (apply_patch), then resumes the thread for a reflection',
		async () => {
			const s = await server({
				turns: [
					{ toolCall: { writeFile: { path: 'hello.txt', content: 'hi there\n' } }, usage: { input_tokens: 1000, output_tokens: 1 } },
					{ text: 'done', usage: { input_tokens: 2000, output_tokens: 2 } },
					{ match: REFLECT, text: 'I learned Z', usage: { input_tokens: 4000, output_tokens: 4 } },
				],
			});
			const dirs = await codexDirs();
			const env = codexEnv(dirs);
			const last1 = path.join(dirs.home, 'last-1.txt');
			const first = await run(
				CODEX,
				['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s), '--sandbox', 'workspace-write', '--output-last-message', last1, '-'],
				{ cwd: dirs.work, env, stdin: 'Please create hello.txt' },
			);
			expect(first.code, first.stderr).toBe(0);
			expect(await readFile(path.join(dirs.work, 'hello.txt'), 'utf8')).toBe('hi there\n');
			expect(await readFile(last1, 'utf8')).toBe('done');

			const types = first.events.map((e) => e.type);
			expect(types).toEqual(['thread.started', 'turn.started', 'item.started', 'item.completed', 'item.completed', 'turn.completed']);
			const threadId: string = first.events[0]!.thread_id;
			expect(threadId).toMatch(/^[0-9a-f-]{36}$/);
			expect(first.events[2]!.item).toMatchObject({ type: 'file_change', status: 'in_progress', changes: [{ path: path.join(dirs.work, 'hello.txt'), kind: 'add' }] });
			expect(first.events[3]!.item).toMatchObject({ type: 'file_change', status: 'completed' });
			expect(first.events[4]!.item).toMatchObject({ type: 'agent_message', text: 'done' });
			expect(first.events[5]).toEqual({
				type: 'turn.completed',
				usage: { input_tokens: 3000, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 3, reasoning_output_tokens: 0 },
			});
			// the tool really was codex's freeform apply_patch
			const call = modelCalls(s.requests)[1]!.body as { input: Ev[] };
			expect(call.input.find((i) => i.type === 'custom_tool_call')).toMatchObject({ name: 'apply_patch' });

			// Reflection: `codex exec resume <thread_id>`; no --sandbox flag there, same -m.
			const last2 = path.join(dirs.home, 'last-2.txt');
			const second = await run(
				CODEX,
				['exec', 'resume', threadId, '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s), '-c', 'sandbox_mode="workspace-write"', '--output-last-message', last2, '-'],
				{ cwd: dirs.work, env, stdin: `${REFLECT} what did you learn?` },
			);
			expect(second.code, second.stderr).toBe(0);
			expect(second.events.map((e) => e.type)).toEqual(['thread.started', 'turn.started', 'item.completed', 'turn.completed']);
			expect(second.events[0]!.thread_id).toBe(threadId);
			expect(second.events[2]!.item).toMatchObject({ type: 'agent_message', text: 'I learned Z' });
			// turn.completed.usage after a resume is CUMULATIVE over the thread (3000 + 4000)
			expect(second.events[3]!.usage).toMatchObject({ input_tokens: 7000, output_tokens: 7 });
			expect(await readFile(last2, 'utf8')).toBe('I learned Z');

			const lastCall = modelCalls(s.requests).at(-1)!;
			expect(userTexts(lastCall).some((t) => t.includes(REFLECT))).toBe(true);
			expect(lastCall.turn).toBe(2);
			expect(lastCall.headers.authorization).toBe('Bearer sk-test-pak2');
		},
		TIMEOUT,
	);

	it(
		'runs a shell command through exec_command in the workspace-write sandbox',
		async () => {
			const s = await server({ turns: [{ toolCall: { shell: 'printf ok > made-by-shell.txt' } }, { text: 'done' }] });
			const dirs = await codexDirs();
			const r = await run(CODEX, ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s), '--sandbox', 'workspace-write', 'go'], { cwd: dirs.work, env: codexEnv(dirs) });
			expect(r.code, r.stderr).toBe(0);
			expect(await readFile(path.join(dirs.work, 'made-by-shell.txt'), 'utf8')).toBe('ok');
			const done = r.events.find((e) => e.type === 'item.completed' && e.item.type === 'command_execution');
			expect(done?.item).toMatchObject({ status: 'completed', exit_code: 0 });
			expect(done?.item.command).toContain('printf ok > made-by-shell.txt');
		},
		TIMEOUT,
	);

	it(
		'HTTP 500 with no retries: exit 1, error + turn.failed events, one request',
		async () => {
			const s = await server({ mode: 'status500' });
			const dirs = await codexDirs();
			const lastMsg = path.join(dirs.home, 'last.txt');
			const r = await run(CODEX, ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s), '--sandbox', 'workspace-write', '-o', lastMsg, 'hello'], { cwd: dirs.work, env: codexEnv(dirs) });
			expect(r.code).toBe(1);
			expect(r.events.map((e) => e.type)).toEqual(['thread.started', 'turn.started', 'error', 'turn.failed']);
			expect(r.events[3]!.error.message).toBeTypeOf('string');
			expect(modelCalls(s.requests)).toHaveLength(1);
			expect(await readFile(lastMsg, 'utf8')).toBe(''); // written, but empty
		},
		TIMEOUT,
	);

	it(
		'HTTP 500 with request_max_retries=1, stream_max_retries=1: (1+1)*(1+1) = 4 requests, "Reconnecting... 1/1" error event',
		async () => {
			const s = await server({ mode: 'status500' });
			const dirs = await codexDirs();
			const r = await run(CODEX, ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s, 1), '--sandbox', 'workspace-write', 'hello'], { cwd: dirs.work, env: codexEnv(dirs) });
			expect(r.code).toBe(1);
			expect(r.events.filter((e) => e.type === 'error').map((e) => e.message)[0]).toMatch(/^Reconnecting\.\.\. 1\/1/);
			expect(r.events.at(-1)!.type).toBe('turn.failed');
			expect(modelCalls(s.requests)).toHaveLength(4);
		},
		TIMEOUT,
	);

	it(
		'HTTP 401: exit 1, turn.failed message carries "401 Unauthorized" and the body message',
		async () => {
			const s = await server({ mode: 'status401' });
			const dirs = await codexDirs();
			const r = await run(CODEX, ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s), '--sandbox', 'workspace-write', 'hello'], { cwd: dirs.work, env: codexEnv(dirs) });
			expect(r.code).toBe(1);
			const failed = r.events.find((e) => e.type === 'turn.failed');
			expect(failed?.error.message).toContain('unexpected status 401 Unauthorized');
			expect(failed?.error.message).toContain('Incorrect API key provided');
		},
		TIMEOUT,
	);

	it(
		'stall before headers: codex waits (no timeout applies); killing it and close() are prompt',
		async () => {
			const s = await server({ mode: 'stall' });
			const dirs = await codexDirs();
			const r = await run(CODEX, ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s, 0, ',stream_idle_timeout_ms=1000'), '--sandbox', 'workspace-write', 'hello'], {
				cwd: dirs.work,
				env: codexEnv(dirs),
				timeoutMs: 6_000,
			});
			expect(r.signal).toBe('SIGKILL'); // still waiting after 6 s, despite the 1 s idle timeout
			expect(r.events.map((e) => e.type)).toEqual(['thread.started', 'turn.started']);
			const t0 = Date.now();
			await s.close();
			expect(Date.now() - t0).toBeLessThan(2_000);
		},
		TIMEOUT,
	);

	it(
		'stall after headers: stream_idle_timeout_ms bounds the wait ("idle timeout waiting for SSE")',
		async () => {
			const s = await server({ mode: 'stallAfterHeaders' });
			const dirs = await codexDirs();
			const r = await run(CODEX, ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', ...codexProvider(s, 0, ',stream_idle_timeout_ms=1500'), '--sandbox', 'workspace-write', 'hello'], {
				cwd: dirs.work,
				env: codexEnv(dirs),
			});
			expect(r.code).toBe(1);
			expect(r.events.find((e) => e.type === 'turn.failed')?.error.message).toContain('idle timeout waiting for SSE');
			expect(r.ms).toBeLessThan(20_000);
		},
		TIMEOUT,
	);
});

// ------------------------------------------------------------------ the server's own rules

describe('model server turn selection', () => {
	const turns = [{ text: 'a' }, { text: 'b' }, { match: 'REFLECT', text: 'c' }, { text: 'd' }];
	it('counts earlier model outputs, and anchors on a match marker', () => {
		expect(pickTurn(turns, [{ kind: 'user', text: 'go' }])).toBe(0);
		expect(pickTurn(turns, [{ kind: 'user', text: 'go' }, { kind: 'model' }, { kind: 'model' }, { kind: 'other' }])).toBe(1);
		expect(pickTurn(turns, [{ kind: 'user', text: 'REFLECT now' }])).toBe(2);
		expect(pickTurn(turns, [{ kind: 'user', text: 'go' }, { kind: 'model' }, { kind: 'user', text: 'REFLECT' }, { kind: 'model' }, { kind: 'other' }])).toBe(3);
	});

	it('answers the same request the same way (retry-safe) and falls back past the end', async () => {
		const s = await server({ turns: [{ text: 'only' }], fallbackText: 'fallback' });
		const body = { model: 'm', stream: false, tools: [{ name: 'Write' }], messages: [{ role: 'user', content: 'hi' }] };
		const post = (b: unknown) => fetch(`${s.url}/v1/messages`, { method: 'POST', body: JSON.stringify(b), headers: { 'content-type': 'application/json' } }).then((r) => r.json() as Promise<Ev>);
		expect((await post(body)).content[0].text).toBe('only');
		expect((await post(body)).content[0].text).toBe('only');
		const later = { ...body, messages: [...body.messages, { role: 'assistant', content: 'only' }, { role: 'user', content: 'more' }] };
		expect((await post(later)).content[0].text).toBe('fallback');
		expect(s.requests.map((r) => r.turn)).toEqual([0, 0, -1]);
		const count = await fetch(`${s.url}/v1/messages/count_tokens`, { method: 'POST', body: '{"messages":[]}' }).then((r) => r.json() as Promise<Ev>);
		expect(count.input_tokens).toBeGreaterThan(0);
	});
});
