import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { appendJsonLine, readJsonFile, writeJsonAtomic } from './files.js';

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
}

/** `<runtime-root>/conversations/<id>/meta.json`. */
export interface ConversationMeta {
  id: string;
  started_by: 'operator' | 'system';
  started_at: string;
  channel: 'filesystem';
}

/** The conversation id pattern: `c-<yyyymmddThhmmss>-<8 hex>`. */
export const CONVERSATION_ID_PATTERN = /^c-\d{8}T\d{6}-[0-9a-f]{8}$/;

function conversationDir(paths: GardenPaths, id: string): string {
  if (!CONVERSATION_ID_PATTERN.test(id)) throw new Error(`conversation id ${JSON.stringify(id)} is not of the form c-<time>-<hex>`);
  return path.join(paths.conversationsDir, id);
}

/** Starts a conversation; `startedBy` is "system" for the startup note, "operator" otherwise. */
export async function openConversation(paths: GardenPaths, startedBy: ConversationMeta['started_by'], now: Date = new Date()): Promise<ConversationMeta> {
  const stamp = now.toISOString().replace(/[-:]/g, '').slice(0, 15);
  const meta: ConversationMeta = { id: `c-${stamp}-${randomUUID().slice(0, 8)}`, started_by: startedBy, started_at: now.toISOString(), channel: 'filesystem' };
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
  let text: string;
  try {
    text = await fsp.readFile(path.join(conversationDir(paths, id), 'messages.jsonl'), 'utf8');
  } catch {
    return [];
  }
  const messages: ChatMessage[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const value = JSON.parse(line) as ChatMessage;
      if (typeof value.text === 'string' && typeof value.sender === 'string') messages.push(value);
    } catch {
      // a torn or foreign line: skipped, never rewritten
    }
  }
  return messages.slice(-limit);
}
