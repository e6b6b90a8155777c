import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { appendJsonLine, readJsonFile, readJsonLines, writeJsonAtomic } from './files.js';

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
  await writeJsonAtomic(path.join(conversationDir(paths, meta.id), 'meta.json'), meta);
  return meta;
}

/** The most recently started conversation, if any. */
export async function latestConversation(paths: GardenPaths): Promise<ConversationMeta | undefined> {
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
  await appendJsonLine(path.join(conversationDir(paths, id), 'messages.jsonl'), full);
  return full;
}

/** The last `limit` messages of a conversation (malformed lines are skipped). */
export async function readConversationMessages(paths: GardenPaths, id: string, limit = 200): Promise<ChatMessage[]> {
  const isMessage = (v: unknown) => typeof (v as ChatMessage)?.text === 'string' && typeof (v as ChatMessage)?.sender === 'string';
  const messages = await readJsonLines<ChatMessage>(path.join(conversationDir(paths, id), 'messages.jsonl'), isMessage);
  return messages.slice(-limit);
}

/**
 * Reads a conversation's meta.json.
 *
 * @throws Error naming the conversation when it does not exist or is malformed.
 */
export async function readConversation(paths: GardenPaths, id: string): Promise<ConversationMeta> {
  const read = await readJsonFile(path.join(conversationDir(paths, id), 'meta.json'));
  if (!read.ok) throw new Error(read.missing ? `no conversation ${id}` : read.message);
  return read.value as ConversationMeta;
}

/** Records the agent session a conversation continues on its next turn, with the thread's running total where the driver reports one. */
export async function setConversationContinuity(paths: GardenPaths, id: string, driver: string, sessionId: string, now: Date = new Date(), plant?: string, threadUsage?: ThreadUsage): Promise<ConversationMeta> {
  const meta = await readConversation(paths, id);
  const next: ConversationMeta = { ...meta, continuity: { driver, session_id: sessionId, updated_at: now.toISOString(), ...(plant ? { plant } : {}), ...(threadUsage ? { thread_usage: threadUsage } : {}) } };
  await writeJsonAtomic(path.join(conversationDir(paths, id), 'meta.json'), next);
  return next;
}

/**
 * Forgets a conversation's agent session, so its next turn starts a fresh
 * one (after a resume that can never succeed).
 */
export async function clearConversationContinuity(paths: GardenPaths, id: string): Promise<ConversationMeta> {
  const meta = await readConversation(paths, id);
  const { continuity: _dropped, ...rest } = meta;
  await writeJsonAtomic(path.join(conversationDir(paths, id), 'meta.json'), rest);
  return rest as ConversationMeta;
}

/** Every conversation, oldest first (unreadable ones skipped). */
export async function listConversations(paths: GardenPaths): Promise<ConversationMeta[]> {
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
