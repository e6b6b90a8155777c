import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { appendJsonLine, readJsonFile, readJsonLines, writeJsonAtomic } from './files.js';
import { storeOf, type GardenStore } from './backend.js';

/** Who wrote a conversation message. */
export type ChatSender = 'operator' | 'garden' | 'system';

/** One message, a line of `<runtime-root>/conversations/<id>/messages.jsonl`. */
export interface ChatMessage {
  ts: string;
  sender: ChatSender;
  text: string;
  /** Provenance: the run that produced it, and the reply note it came from. */
  run?: string;
  note?: string;
  /** The goal an operator message queued. */
  goal?: string;
  /** For play-by-play lines: the lifecycle fact they report (`run_started:<id>`), so each is said once. */
  fact?: string;
}

/** `<runtime-root>/conversations/<id>/meta.json`. */
export interface ConversationMeta {
  id: string;
  started_by: 'operator' | 'system';
  started_at: string;
  channel: 'filesystem';
  /** True for the conversation `pak2 cycle` opens with its startup note. */
  startup?: boolean;
  /**
   * The agent session the conversation resumes on its next turn (per
   * driver). `thread_usage`: for a driver whose usage after a resume is the
   * thread's running total (codex), that total after the last turn, so the
   * next turn is charged its own tokens only (docs/conversation/level2.md).
   */
  continuity?: { driver: string; session_id: string; updated_at: string; plant?: string; thread_usage?: ThreadUsage };
}

/** A thread's running token total, as codex reports it after each turn. */
export interface ThreadUsage {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens?: number;
}

/** The conversation id pattern: `c-<yyyymmddThhmmss>-<8 hex>`. */
export const CONVERSATION_ID_PATTERN = /^c-\d{8}T\d{6}-[0-9a-f]{8}$/;

function conversationDir(paths: GardenPaths, id: string): string {
  if (!CONVERSATION_ID_PATTERN.test(id)) throw new Error(`conversation id ${JSON.stringify(id)} is not of the form c-<time>-<hex>`);
  return path.join(paths.conversationsDir, id);
}

/** Starts a conversation; `startedBy` is "system" for the startup note, "operator" otherwise. */
export async function openConversation(paths: GardenPaths, startedBy: ConversationMeta['started_by'], now: Date = new Date(), options: { startup?: boolean } = {}): Promise<ConversationMeta> {
  const stamp = now.toISOString().replace(/[-:]/g, '').slice(0, 15);
  const meta: ConversationMeta = {
    id: `c-${stamp}-${randomUUID().slice(0, 8)}`,
    started_by: startedBy,
    started_at: now.toISOString(),
    channel: 'filesystem',
    ...(options.startup ? { startup: true } : {}),
  };
  const file = path.join(conversationDir(paths, meta.id), 'meta.json');
  const store = storeOf(paths);
  if (store) await store.putDocument('conversation', meta.id, meta);
  else await writeJsonAtomic(file, meta);
  return meta;
}

/** A store's conversations, oldest first: the ids of the pattern whose record is an object (a meta.json that parses). */
async function storedConversations(store: GardenStore): Promise<ConversationMeta[]> {
  return (await store.documentRecords('conversation'))
    .filter(({ key, record }) => CONVERSATION_ID_PATTERN.test(key) && typeof record === 'object' && record !== null)
    .map(({ record }) => record as ConversationMeta);
}

/** The most recently started conversation, if any. */
export async function latestConversation(paths: GardenPaths): Promise<ConversationMeta | undefined> {
  const store = storeOf(paths);
  if (store) return (await storedConversations(store)).at(-1);
  let names: string[];
  try {
    names = await fsp.readdir(paths.conversationsDir);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
  const ids = names.filter((n) => CONVERSATION_ID_PATTERN.test(n)).sort();
  for (const id of ids.reverse()) {
    const read = await readJsonFile(path.join(paths.conversationsDir, id, 'meta.json'));
    if (read.ok) return read.value as ConversationMeta;
  }
  return undefined;
}

/** Appends a message to a conversation's messages.jsonl. */
export async function appendConversationMessage(paths: GardenPaths, id: string, message: Omit<ChatMessage, 'ts'> & { ts?: string }, now: Date = new Date()): Promise<ChatMessage> {
  const full: ChatMessage = { ...message, ts: message.ts ?? now.toISOString() };
  const file = path.join(conversationDir(paths, id), 'messages.jsonl');
  const store = storeOf(paths);
  if (store) await store.appendDocumentLine('conversation-message', id, full);
  else await appendJsonLine(file, full);
  return full;
}

/** The last `limit` messages of a conversation (malformed lines are skipped). */
export async function readConversationMessages(paths: GardenPaths, id: string, limit = 200): Promise<ChatMessage[]> {
  const isMessage = (v: unknown) => typeof (v as ChatMessage)?.text === 'string' && typeof (v as ChatMessage)?.sender === 'string';
  const file = path.join(conversationDir(paths, id), 'messages.jsonl');
  const store = storeOf(paths);
  const messages = store
    ? ((await store.documentLines('conversation-message', id)).map((line) => line.record).filter(isMessage) as ChatMessage[])
    : await readJsonLines<ChatMessage>(file, isMessage);
  return messages.slice(-limit);
}

/**
 * Reads a conversation's meta.json.
 *
 * @throws Error naming the conversation when it does not exist or is malformed.
 */
export async function readConversation(paths: GardenPaths, id: string): Promise<ConversationMeta> {
  const file = path.join(conversationDir(paths, id), 'meta.json');
  const store = storeOf(paths);
  if (store) {
    const record = await store.documentRecord('conversation', id);
    if (record === undefined) throw new Error(`no conversation ${id}`);
    if (typeof record !== 'object' || record === null) throw new Error(`${store.where}: conversations/${id}/meta.json: not a JSON object`);
    return record as ConversationMeta;
  }
  const read = await readJsonFile(file);
  if (!read.ok) throw new Error(read.missing ? `no conversation ${id}` : read.message);
  return read.value as ConversationMeta;
}

/** Records the agent session a conversation continues on its next turn, with the thread's running total where the driver reports one. */
export async function setConversationContinuity(paths: GardenPaths, id: string, driver: string, sessionId: string, now: Date = new Date(), plant?: string, threadUsage?: ThreadUsage): Promise<ConversationMeta> {
  return updateConversation(paths, id, (meta) => ({ ...meta, continuity: { driver, session_id: sessionId, updated_at: now.toISOString(), ...(plant ? { plant } : {}), ...(threadUsage ? { thread_usage: threadUsage } : {}) } }));
}

/**
 * Forgets a conversation's agent session, so its next turn starts a fresh
 * one (after a resume that can never succeed).
 */
export async function clearConversationContinuity(paths: GardenPaths, id: string): Promise<ConversationMeta> {
  return updateConversation(paths, id, (meta) => {
    const { continuity: _dropped, ...rest } = meta;
    return rest as ConversationMeta;
  });
}

/** Read-change-write of a conversation's meta.json; on a store under its lock (servers on one database). */
async function updateConversation(paths: GardenPaths, id: string, change: (meta: ConversationMeta) => ConversationMeta): Promise<ConversationMeta> {
  const store = storeOf(paths);
  const update = async (): Promise<ConversationMeta> => {
    const next = change(await readConversation(paths, id));
    if (store) await store.putDocument('conversation', id, next);
    else await writeJsonAtomic(path.join(conversationDir(paths, id), 'meta.json'), next);
    return next;
  };
  return store ? store.withDocumentLock('conversation', id, update) : update();
}

/** Every conversation, oldest first (unreadable ones skipped). */
export async function listConversations(paths: GardenPaths): Promise<ConversationMeta[]> {
  const store = storeOf(paths);
  if (store) return storedConversations(store);
  let names: string[];
  try {
    names = await fsp.readdir(paths.conversationsDir);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw error;
  }
  const out: ConversationMeta[] = [];
  for (const id of names.filter((n) => CONVERSATION_ID_PATTERN.test(n)).sort()) {
    const read = await readJsonFile(path.join(paths.conversationsDir, id, 'meta.json'));
    if (read.ok) out.push(read.value as ConversationMeta);
  }
  return out;
}
