/**
 * A scripted, loopback-only model server for end-to-end tests of the real
 * agent CLIs. It speaks just enough of
 *
 *  - the Anthropic Messages API (`POST /v1/messages`, streaming SSE and plain
 *    JSON, plus `POST /v1/messages/count_tokens` and the `HEAD /` probe that
 *    Claude Code sends on start-up), and
 *  - the OpenAI Responses API (`POST /v1/responses`, streaming SSE, plus
 *    `GET /v1/models`),
 *
 * for `claude -p` and `codex exec` to run a whole agent loop against it: text
 * answers, real tool calls (claude's `Write` / `Bash`, codex's `apply_patch` /
 * `exec_command` / `shell`) and failures (HTTP 500, HTTP 401, a stalled
 * request).
 *
 * ## Which turn answers a request
 *
 * The answer is chosen from the request's own conversation history, not from
 * a request counter, so a retried request gets the same answer and a resumed
 * session continues where it left off:
 *
 *  1. Count the model outputs already in the history: each maximal run of
 *     consecutive assistant items is one earlier response (Anthropic: messages
 *     with `role: "assistant"`; Responses API: `message` items with
 *     `role: "assistant"`, `function_call`, `custom_tool_call`, `reasoning`,
 *     ...). Call that count `k`.
 *  2. Turns may carry a `match` marker. Find the latest user message in the
 *     history whose text contains some turn's marker. If there is one, that
 *     turn is the anchor `a`, `j` is the number of model outputs after that
 *     user message, and the answer is `turns[a + j]`.
 *  3. Otherwise the answer is `turns[k]`.
 *  4. Past the end of `turns` the server answers `script.fallbackText`
 *     (default `"OK"`), so a CLI that makes an extra request does not break.
 *
 * So "turn 1: write a file; turn 2: say done; turn 3 (reflection): say what was
 * learned" is `turns: [{toolCall}, {text: 'done'}, {text: 'I learned Z'}]`,
 * and giving turn 3 `match: '<reflection marker>'` makes it answer the
 * reflection prompt whatever came before.
 *
 * `mode` (whole server) or a turn's `fail` selects a failure instead:
 * `status500` (HTTP 500 with an API-style error body), `status401` (HTTP 401
 * with an API-style authentication error body), `stall` (read the request,
 * never answer; `close()` still returns promptly because it destroys every
 * open socket), `stallAfterHeaders` (answer 200 with event-stream headers,
 * then never send an event). A turn's `delayMs` holds the request open
 * that long before answering (a model that takes its time).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';

export type FailureMode = 'status500' | 'status401' | 'stall' | 'stallAfterHeaders';

/** A tool call, given portably or per API. */
export interface ToolCallSpec {
	/**
	 * Portable: create/overwrite a file. A relative `path` is resolved against
	 * the agent's working directory (claude: read from the system prompt or its
	 * `role: "system"` message, for
	 * the `Write` tool which wants absolute paths; codex: its tools run in the
	 * working directory already).
	 * claude -> `Write {file_path, content}` (or `Bash` if `Write` is absent);
	 * codex -> `apply_patch` (freeform "*** Add File") if offered, else
	 * `exec_command {cmd}` / `shell {command}` running a printf.
	 */
	writeFile?: { path: string; content: string };
	/** Portable: run a shell command in the working directory. claude -> `Bash`; codex -> `exec_command` / `shell`. */
	shell?: string;
	/**
	 * claude only: start background work, the shapes Claude Code 2.1.198+ runs
	 * on its own: a backgrounded shell command (`Bash` with
	 * `run_in_background: true`: a `local_bash` task) or a backgrounded
	 * subagent (`Task` with `run_in_background: true`: a `local_agent` task,
	 * whose own requests carry `prompt`, so a turn can answer it by `match`).
	 * Codex exec has no background tasks.
	 */
	background?: { shell: string; description?: string } | { agent: { description: string; prompt: string } };
	/** Exact Anthropic tool_use, overriding the portable forms for claude. */
	anthropic?: { name: string; input: Record<string, unknown> };
	/** Exact Responses API output item, overriding the portable forms for codex. */
	openai?:
		| { type: 'function_call'; name: string; arguments: Record<string, unknown> }
		| { type: 'custom_tool_call'; name: string; input: string };
}

interface TurnBase {
	/** Anchor marker: see "Which turn answers a request" above. */
	match?: string;
	/** Usage reported for this answer (defaults: 100 input, 10 output tokens). */
	usage?: { input_tokens?: number; output_tokens?: number };
	/** Milliseconds the model "thinks" before it answers (the request is held open, then answered). */
	delayMs?: number;
}
export interface TextTurn extends TurnBase {
	text: string;
}
export interface ToolCallTurn extends TurnBase {
	toolCall: ToolCallSpec;
	/** Optional text emitted before the tool call in the same answer. */
	text?: string;
}
export interface FailTurn extends TurnBase {
	fail: FailureMode;
}
export type Turn = TextTurn | ToolCallTurn | FailTurn;

export interface ModelScript {
	/** Whole-server failure mode; every model request fails this way. */
	mode?: 'normal' | FailureMode;
	turns?: Turn[];
	/** Answer once `turns` is exhausted. Default "OK". */
	fallbackText?: string;
}

export type ApiKind = 'anthropic' | 'openai' | 'other';

export interface RecordedRequest {
	method: string;
	/** Full request URL path including the query string. */
	url: string;
	/** Path without the query string. */
	path: string;
	headers: http.IncomingHttpHeaders;
	/** Parsed JSON body, the raw string if it was not JSON, or undefined if empty. */
	body: unknown;
	api: ApiKind;
	/** Index into `script.turns` the answer came from (-1: fallback text); unset for non-model requests. */
	turn?: number;
	/** What the server did. */
	answer?: 'text' | 'toolCall' | FailureMode | 'fallback' | 'aux';
	/** Milliseconds since the server started. */
	at: number;
}

export interface ModelServer {
	url: string;
	port: number;
	requests: RecordedRequest[];
	close(): Promise<void>;
}

const DEFAULT_USAGE = { input_tokens: 100, output_tokens: 10 };

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** All text of an Anthropic content value (string or block array), tool results excluded. */
function anthropicText(content: unknown): string {
	if (typeof content === 'string') return content;
	if (!Array.isArray(content)) return '';
	return content
		.filter((b) => isObj(b) && b.type === 'text' && typeof b.text === 'string')
		.map((b) => (b as Json).text as string)
		.join('\n');
}

/** All text of a Responses API message item. */
function openaiText(content: unknown): string {
	if (typeof content === 'string') return content;
	if (!Array.isArray(content)) return '';
	return content
		.filter((b) => isObj(b) && typeof b.text === 'string')
		.map((b) => (b as Json).text as string)
		.join('\n');
}

/** History normalised to a list of entries: a model output, or a user message with its text. */
export type Entry = { kind: 'model' } | { kind: 'user'; text: string } | { kind: 'other' };

function anthropicHistory(body: Json): Entry[] {
	const messages = Array.isArray(body.messages) ? body.messages : [];
	return messages.map((m): Entry => {
		if (!isObj(m)) return { kind: 'other' };
		if (m.role === 'assistant') return { kind: 'model' };
		if (m.role === 'user') return { kind: 'user', text: anthropicText(m.content) };
		return { kind: 'other' };
	});
}

const OPENAI_MODEL_ITEMS = new Set([
	'function_call',
	'custom_tool_call',
	'local_shell_call',
	'reasoning',
	'web_search_call',
	'tool_search_call',
]);

function openaiHistory(body: Json): Entry[] {
	const input = Array.isArray(body.input) ? body.input : typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : [];
	return input.map((item): Entry => {
		if (!isObj(item)) return { kind: 'other' };
		const type = item.type ?? (item.role ? 'message' : undefined);
		if (type === 'message' && item.role === 'assistant') return { kind: 'model' };
		if (type === 'message' && item.role === 'user') return { kind: 'user', text: openaiText(item.content) };
		if (typeof type === 'string' && OPENAI_MODEL_ITEMS.has(type)) return { kind: 'model' };
		return { kind: 'other' };
	});
}

/** Number of maximal runs of consecutive model entries. */
function countModelRuns(entries: Entry[]): number {
	let runs = 0;
	let inRun = false;
	for (const e of entries) {
		if (e.kind === 'model') {
			if (!inRun) runs++;
			inRun = true;
		} else {
			// User messages, tool results and system/developer messages all come
			// after a complete response, so any of them ends a run.
			inRun = false;
		}
	}
	return runs;
}

/** Pick the turn index for a conversation history (see the module doc). */
export function pickTurn(turns: Turn[], entries: Entry[]): number {
	for (let i = entries.length - 1; i >= 0; i--) {
		const e = entries[i]!;
		if (e.kind !== 'user') continue;
		const anchor = turns.findIndex((t) => t.match !== undefined && e.text.includes(t.match));
		if (anchor >= 0) return anchor + countModelRuns(entries.slice(i + 1));
	}
	return countModelRuns(entries);
}

/**
 * "Primary working directory: /x" from Claude Code's system prompt: the
 * top-level `system` field (up to 2.1.197) or, as 2.1.332 sends it, a
 * `role: "system"` message in `messages` ("# Environment"); the last one
 * said wins (a later "# Environment update" may move it).
 */
function claudeCwd(body: Json): string | undefined {
	const messages = Array.isArray(body.messages) ? body.messages : [];
	const texts = [anthropicText(body.system), ...messages.filter((m) => isObj(m) && m.role === 'system').map((m) => anthropicText((m as Json).content))];
	let cwd: string | undefined;
	for (const text of texts) for (const m of text.matchAll(/working directory:\s*(\S+)/gi)) cwd = m[1];
	return cwd;
}

function shellQuote(s: string): string {
	return `'${s.replace(/'/g, `'\\''`)}'`;
}

function writeFileCommand(p: string, content: string): string {
	return `printf '%s' ${shellQuote(content)} > ${shellQuote(p)}`;
}

function toolNames(body: Json): Set<string> {
	const tools = Array.isArray(body.tools) ? body.tools : [];
	return new Set(tools.filter(isObj).map((t) => String(t.name ?? '')));
}

function anthropicToolUse(spec: ToolCallSpec, body: Json): { name: string; input: Json } {
	if (spec.anthropic) return spec.anthropic;
	const tools = toolNames(body);
	if (spec.writeFile) {
		if (tools.has('Write') || tools.size === 0) {
			const cwd = claudeCwd(body);
			const file = path.isAbsolute(spec.writeFile.path) || !cwd ? spec.writeFile.path : path.join(cwd, spec.writeFile.path);
			return { name: 'Write', input: { file_path: file, content: spec.writeFile.content } };
		}
		return { name: 'Bash', input: { command: writeFileCommand(spec.writeFile.path, spec.writeFile.content), description: 'Write a file' } };
	}
	if (spec.shell !== undefined) return { name: 'Bash', input: { command: spec.shell, description: 'Run a command' } };
	if (spec.background && 'shell' in spec.background) return { name: 'Bash', input: { command: spec.background.shell, description: spec.background.description ?? 'Run in the background', run_in_background: true } };
	if (spec.background && 'agent' in spec.background) {
		const { description, prompt } = spec.background.agent;
		return { name: tools.has('Agent') ? 'Agent' : 'Task', input: { description, prompt, subagent_type: 'general-purpose', run_in_background: true } };
	}
	throw new Error('toolCall needs writeFile, shell, background or anthropic');
}

type OpenAiCall =
	| { type: 'function_call'; name: string; arguments: string }
	| { type: 'custom_tool_call'; name: string; input: string };

function openaiToolCall(spec: ToolCallSpec, body: Json): OpenAiCall {
	if (spec.openai) {
		return spec.openai.type === 'function_call'
			? { type: 'function_call', name: spec.openai.name, arguments: JSON.stringify(spec.openai.arguments) }
			: spec.openai;
	}
	const tools = toolNames(body);
	if (spec.writeFile && tools.has('apply_patch')) {
		const applyPatch = (Array.isArray(body.tools) ? body.tools : []).find((t) => isObj(t) && t.name === 'apply_patch') as Json | undefined;
		const lines = spec.writeFile.content.split('\n');
		if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
		const patch = ['*** Begin Patch', `*** Add File: ${spec.writeFile.path}`, ...lines.map((l) => `+${l}`), '*** End Patch'].join('\n');
		if (applyPatch?.type === 'custom') return { type: 'custom_tool_call', name: 'apply_patch', input: patch };
		return { type: 'function_call', name: 'apply_patch', arguments: JSON.stringify({ input: patch }) };
	}
	if (spec.background) throw new Error('codex exec has no background tasks: background is a claude-only tool call');
	const command = spec.writeFile ? writeFileCommand(spec.writeFile.path, spec.writeFile.content) : spec.shell;
	if (command === undefined) throw new Error('toolCall needs writeFile, shell or openai');
	if (tools.has('exec_command') || tools.size === 0) return { type: 'function_call', name: 'exec_command', arguments: JSON.stringify({ cmd: command }) };
	if (tools.has('shell_command')) return { type: 'function_call', name: 'shell_command', arguments: JSON.stringify({ command }) };
	return { type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', command] }) };
}

function sse(res: http.ServerResponse, event: string, data: Json): void {
	res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
	const text = JSON.stringify(body);
	res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
	res.end(text);
}

function sendFailure(res: http.ServerResponse, api: ApiKind, mode: 'status500' | 'status401'): void {
	if (mode === 'status500') {
		if (api === 'openai') sendJson(res, 500, { error: { message: 'scripted internal server error', type: 'server_error', param: null, code: 'server_error' } });
		else sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: 'scripted internal server error' } });
	} else {
		if (api === 'openai') sendJson(res, 401, { error: { message: 'Incorrect API key provided: scripted 401.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
		else sendJson(res, 401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
	}
}

function fail(res: http.ServerResponse, api: ApiKind, mode: FailureMode): void {
	if (mode === 'stall') return; // never answer; close() destroys the socket
	if (mode === 'stallAfterHeaders') {
		// 200 + SSE headers, then silence: trips the CLIs' stream-idle timeouts.
		res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
		res.flushHeaders();
		return;
	}
	sendFailure(res, api, mode);
}

function usageOf(turn: Turn | undefined): { input_tokens: number; output_tokens: number } {
	return { ...DEFAULT_USAGE, ...(turn?.usage ?? {}) };
}

/** A minimal value satisfying a (simple) JSON schema. */
function sampleFromSchema(schema: unknown): unknown {
	if (!isObj(schema)) return 'scripted';
	if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
	if ('const' in schema) return schema.const;
	const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
	switch (type) {
		case 'object': {
			const props = isObj(schema.properties) ? schema.properties : {};
			const out: Json = {};
			for (const [k, v] of Object.entries(props)) out[k] = sampleFromSchema(v);
			return out;
		}
		case 'array':
			return [];
		case 'number':
		case 'integer':
			return 0;
		case 'boolean':
			return false;
		case 'null':
			return null;
		default:
			return 'Scripted title';
	}
}

/** Text answer for an auxiliary call: JSON if the request asks for a JSON schema. */
function auxText(body: Json, fallback: string): string {
	const oc = isObj(body.output_config) ? body.output_config : undefined;
	const format = oc && isObj(oc.format) ? oc.format : undefined;
	if (format && format.type === 'json_schema') return JSON.stringify(sampleFromSchema(format.schema));
	return fallback;
}

// ---------------------------------------------------------------- Anthropic

function anthropicAnswer(res: http.ServerResponse, body: Json, turn: Turn | undefined, text: string | undefined, seq: number): void {
	const model = typeof body.model === 'string' ? body.model : 'claude-scripted';
	const usage = usageOf(turn);
	const id = `msg_scripted_${seq}`;
	const blocks: Json[] = [];
	if (text !== undefined && text !== '') blocks.push({ type: 'text', text });
	let stop = 'end_turn';
	if (turn && 'toolCall' in turn) {
		const call = anthropicToolUse(turn.toolCall, body);
		blocks.push({ type: 'tool_use', id: `toolu_scripted_${seq}`, name: call.name, input: call.input });
		stop = 'tool_use';
	}
	if (blocks.length === 0) blocks.push({ type: 'text', text: '' });
	const fullUsage = { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

	if (body.stream !== true) {
		sendJson(res, 200, { id, type: 'message', role: 'assistant', model, content: blocks, stop_reason: stop, stop_sequence: null, usage: fullUsage });
		return;
	}
	res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'request-id': `req_scripted_${seq}` });
	sse(res, 'message_start', {
		type: 'message_start',
		message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...fullUsage, output_tokens: 1 } },
	});
	blocks.forEach((b, index) => {
		if (b.type === 'text') {
			sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
			sse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
		} else {
			sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
			sse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
		}
		sse(res, 'content_block_stop', { type: 'content_block_stop', index });
	});
	sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
	sse(res, 'message_stop', { type: 'message_stop' });
	res.end();
}

// ---------------------------------------------------------------- OpenAI Responses

function openaiAnswer(res: http.ServerResponse, body: Json, turn: Turn | undefined, text: string | undefined, seq: number): void {
	const model = typeof body.model === 'string' ? body.model : 'gpt-scripted';
	const usage = usageOf(turn);
	const respId = `resp_scripted_${seq}`;
	const items: Json[] = [];
	if (text !== undefined && text !== '') {
		items.push({ type: 'message', id: `msg_scripted_${seq}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });
	}
	if (turn && 'toolCall' in turn) {
		const call = openaiToolCall(turn.toolCall, body);
		const callId = `call_scripted_${seq}`;
		if (call.type === 'function_call') items.push({ type: 'function_call', id: `fc_scripted_${seq}`, call_id: callId, name: call.name, arguments: call.arguments, status: 'completed' });
		else items.push({ type: 'custom_tool_call', id: `ctc_scripted_${seq}`, call_id: callId, name: call.name, input: call.input, status: 'completed' });
	}
	const baseResponse = { id: respId, object: 'response', created_at: Math.floor(Date.now() / 1000), model, status: 'in_progress', output: [] as Json[] };

	res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': `req_scripted_${seq}` });
	let n = 0;
	const ev = (data: Json) => sse(res, String(data.type), { ...data, sequence_number: n++ });
	ev({ type: 'response.created', response: baseResponse });
	ev({ type: 'response.in_progress', response: baseResponse });
	items.forEach((item, output_index) => {
		if (item.type === 'message') {
			const t = ((item.content as Json[])[0] as Json).text as string;
			ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } });
			ev({ type: 'response.content_part.added', item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
			ev({ type: 'response.output_text.delta', item_id: item.id, output_index, content_index: 0, delta: t });
			ev({ type: 'response.output_text.done', item_id: item.id, output_index, content_index: 0, text: t });
			ev({ type: 'response.content_part.done', item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: t, annotations: [] } });
		} else if (item.type === 'function_call') {
			ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', arguments: '' } });
			ev({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index, delta: item.arguments });
			ev({ type: 'response.function_call_arguments.done', item_id: item.id, output_index, arguments: item.arguments });
		} else {
			ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', input: '' } });
			ev({ type: 'response.custom_tool_call_input.delta', item_id: item.id, output_index, delta: item.input });
			ev({ type: 'response.custom_tool_call_input.done', item_id: item.id, output_index, input: item.input });
		}
		ev({ type: 'response.output_item.done', output_index, item });
	});
	ev({
		type: 'response.completed',
		response: {
			...baseResponse,
			status: 'completed',
			output: items,
			usage: {
				input_tokens: usage.input_tokens,
				input_tokens_details: { cached_tokens: 0 },
				output_tokens: usage.output_tokens,
				output_tokens_details: { reasoning_tokens: 0 },
				total_tokens: usage.input_tokens + usage.output_tokens,
			},
		},
	});
	res.end();
}

// ---------------------------------------------------------------- server

export async function startModelServer(script: ModelScript): Promise<ModelServer> {
	const started = Date.now();
	const requests: RecordedRequest[] = [];
	const sockets = new Set<Socket>();
	const turns = script.turns ?? [];
	let seq = 0;

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => {
			const raw = Buffer.concat(chunks).toString('utf8');
			let body: unknown = undefined;
			if (raw.length > 0) {
				try {
					body = JSON.parse(raw);
				} catch {
					body = raw;
				}
			}
			const url = req.url ?? '/';
			const p = url.split('?')[0]!.replace(/\/+$/, '') || '/';
			const method = req.method ?? 'GET';
			const api: ApiKind = /\/messages(\/|$)/.test(p) ? 'anthropic' : /\/responses$|\/models$/.test(p) ? 'openai' : 'other';
			const rec: RecordedRequest = { method, url, path: p, headers: req.headers, body, api, at: Date.now() - started };
			requests.push(rec);
			try {
				handle(rec, req, res);
			} catch (err) {
				if (!res.headersSent) sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: `model-server bug: ${String(err)}` } });
				else res.end();
			}
		});
	});

	function handle(rec: RecordedRequest, _req: http.IncomingMessage, res: http.ServerResponse): void {
		const body = isObj(rec.body) ? rec.body : {};
		const isModelCall = rec.method === 'POST' && (/\/messages$/.test(rec.path) || /\/responses$/.test(rec.path));

		if (!isModelCall) {
			rec.answer = 'aux';
			if (rec.method === 'HEAD' || (rec.method === 'GET' && rec.path === '/')) {
				res.writeHead(200);
				res.end();
			} else if (rec.method === 'POST' && /\/messages\/count_tokens$/.test(rec.path)) {
				sendJson(res, 200, { input_tokens: Math.max(1, Math.round(JSON.stringify(body).length / 4)) });
			} else if (rec.method === 'GET' && /\/models$/.test(rec.path)) {
				sendJson(res, 200, { object: 'list', data: [], models: [] });
			} else {
				sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `model-server: no route ${rec.method} ${rec.path}` } });
			}
			return;
		}

		const mode = script.mode ?? 'normal';
		if (mode !== 'normal') {
			rec.answer = mode;
			fail(res, rec.api, mode);
			return;
		}

		// Auxiliary Anthropic calls (claude's session-title generation and the
		// like) carry no tools: answer them without consuming a scripted turn.
		if (rec.api === 'anthropic' && !(Array.isArray(body.tools) && body.tools.length > 0)) {
			rec.answer = 'aux';
			anthropicAnswer(res, body, undefined, auxText(body, script.fallbackText ?? 'OK'), ++seq);
			return;
		}

		const entries = rec.api === 'anthropic' ? anthropicHistory(body) : openaiHistory(body);
		const index = pickTurn(turns, entries);
		const turn = turns[index];
		rec.turn = turn ? index : -1;
		const n = ++seq;
		if (turn && 'fail' in turn) {
			rec.answer = turn.fail;
			fail(res, rec.api, turn.fail);
			return;
		}
		const text = turn ? turn.text : (script.fallbackText ?? 'OK');
		rec.answer = !turn ? 'fallback' : 'toolCall' in turn ? 'toolCall' : 'text';
		const answer = () => {
			if (res.destroyed) return;
			if (rec.api === 'anthropic') anthropicAnswer(res, body, turn, text, n);
			else openaiAnswer(res, body, turn, text, n);
		};
		if (turn?.delayMs) setTimeout(answer, turn.delayMs);
		else answer();
	}

	server.on('connection', (socket) => {
		sockets.add(socket);
		socket.on('close', () => sockets.delete(socket));
	});

	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => {
			server.off('error', reject);
			resolve();
		});
	});
	const port = (server.address() as AddressInfo).port;

	let closing: Promise<void> | undefined;
	return {
		url: `http://127.0.0.1:${port}`,
		port,
		requests,
		close() {
			closing ??= new Promise<void>((resolve) => {
				server.close(() => resolve());
				for (const s of sockets) s.destroy();
				server.closeAllConnections?.();
			});
			return closing;
		},
	};
}

/** Text of every user message in a recorded model request (both APIs), for assertions. */
export function userTexts(rec: RecordedRequest): string[] {
	const body = isObj(rec.body) ? rec.body : {};
	const entries = rec.api === 'anthropic' ? anthropicHistory(body) : rec.api === 'openai' ? openaiHistory(body) : [];
	return entries.filter((e): e is { kind: 'user'; text: string } => e.kind === 'user').map((e) => e.text);
}

/** The recorded model calls (POST /v1/messages or /v1/responses), auxiliary requests left out. */
export function modelCalls(requests: RecordedRequest[]): RecordedRequest[] {
	return requests.filter((r) => r.method === 'POST' && (/\/messages$/.test(r.path) || /\/responses$/.test(r.path)));
}
