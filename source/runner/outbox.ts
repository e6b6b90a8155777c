import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { CommentRecord } from '../contracts/index.js';
import { RunnerApiError, type RunnerClient } from './client.js';

/**
 * The agent side of comments for a run a runner holds (docs/runners/level2.md,
 * "An agent's comments"). The agent (or `pak2 comment` in the runner's
 * environment) writes `$PAK2_OUTBOX/<key>.json` — `{"body": "…",
 * "blocking": true}`, written then renamed into place; the relay posts it
 * with the lease (its author becomes `agent:<run>`), moves it to
 * `outbox/sent/<key>.json` with the comment's id, and when an answer to
 * that comment arrives writes the answer comment to `$PAK2_INBOX/<key>.json`.
 * A file that is not such a comment moves to `outbox/rejected/<key>.json`
 * with the reason.
 */

/** A key is a file name stem: letters, digits, `.`, `_`, `-`, not starting with a dot. */
export const OUTBOX_KEY_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** `outbox/sent/<key>.json`: what was posted, and as which comment. */
export interface SentComment {
  key: string;
  body: string;
  blocking: boolean;
  comment: string;
  posted_at: string;
}

/** What one relay pass did. */
export interface RelayResult {
  /** Comments posted this pass. */
  posted: SentComment[];
  /** Keys whose file was not a comment, with why. */
  rejected: { key: string; reason: string }[];
  /** Answers written into the inbox this pass. */
  answered: { key: string; answer: CommentRecord }[];
  /** Names of the artifacts the agent attached this pass. */
  attached?: string[];
}

/** What an outbox file must be, said after each refusal. */
const COMMENT_SHAPE = 'a comment is {"body": "…", "blocking": true|false}';
const ARTIFACT_SHAPE = 'an artifact is {"artifact": {"kind": "link", "name": "…", "url": "https://…"}} or {"artifact": {"kind": "file", "name": "…", "path": "…"}}';

/** Text on one line: line breaks and other control characters escaped (`\\n`), cut at `max` characters (default 300). */
export function oneLine(text: string, max = 300): string {
  const line = text.replace(/\r\n|[\u0000-\u001f\u007f]/g, (c) => (c === '\r\n' || c === '\n' ? '\\n' : c === '\t' ? ' ' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A JSON.parse error in a few words, without the file's text it may quote (`Unexpected token 'x' at position 3`). */
function jsonErrorOf(error: unknown): string {
  const message = (error as Error)?.message ?? String(error);
  // Node quotes the input in its message (`…, "{\n  …" is not valid JSON`): keep the words, drop the quote.
  const words = message.replace(/, ".*" is not valid JSON$/s, '').replace(/ in JSON at position/, ' at position');
  return oneLine(words.length > 120 ? `${words.slice(0, 119)}…` : words);
}

/** Why a parsed outbox file is not a comment, or undefined when it is one. */
function commentProblem(parsed: unknown): string | undefined {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'not a JSON object';
  const { body } = parsed as { body?: unknown };
  if (body === undefined) return 'no "body"';
  if (typeof body !== 'string') return `"body" is not a string (${body === null ? 'null' : typeof body})`;
  if (!body.trim()) return 'empty "body"';
  return undefined;
}

async function writeAtomic(file: string, data: unknown): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  await fsp.writeFile(temp, `${JSON.stringify(data, null, 2)}\n`);
  await fsp.rename(temp, file);
}

/** Relays one run's outbox and inbox. Calls are meant to be serialised by the caller (one pass at a time). */
export class OutboxRelay {
  constructor(
    private readonly client: RunnerClient,
    private readonly goal: string,
    private readonly lease: string,
    readonly outbox: string,
    readonly inbox: string,
    /** For artifacts the agent attaches: its run, and the work directory a `file` artifact's path is inside. */
    private readonly artifacts?: { runId: string; workdir: string },
  ) {}

  /** Creates the outbox and inbox directories. */
  async prepare(): Promise<void> {
    await fsp.mkdir(path.join(this.outbox, 'sent'), { recursive: true });
    await fsp.mkdir(this.inbox, { recursive: true });
  }

  /** The comments already posted (outbox/sent/). */
  sent(): SentComment[] {
    const dir = path.join(this.outbox, 'sent');
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return [];
    }
    const out: SentComment[] = [];
    for (const name of names.sort()) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      try {
        out.push(JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as SentComment);
      } catch {
        // torn: written again by nobody; skipped
      }
    }
    return out;
  }

  /** Posted blocking questions whose answer is not in the inbox yet. */
  waiting(): SentComment[] {
    return this.sent().filter((s) => s.blocking && !fs.existsSync(path.join(this.inbox, `${s.key}.json`)));
  }

  /**
   * True while the agent waits on a question of its own: a posted blocking
   * question with no answer in the inbox yet, or a blocking one still in
   * the outbox (not posted yet: the server may be out of reach).
   */
  asking(): boolean {
    if (this.waiting().length > 0) return true;
    let names: string[];
    try {
      names = fs.readdirSync(this.outbox);
    } catch {
      return false;
    }
    return names.some((name) => {
      if (!name.endsWith('.json') || name.startsWith('.')) return false;
      try {
        return (JSON.parse(fs.readFileSync(path.join(this.outbox, name), 'utf8')) as { blocking?: unknown } | null)?.blocking === true;
      } catch {
        return false;
      }
    });
  }

  /** Posted comments (blocking or not) with no answer in the inbox yet. */
  unanswered(): SentComment[] {
    return this.sent().filter((s) => !fs.existsSync(path.join(this.inbox, `${s.key}.json`)));
  }

  /**
   * Posts each new outbox file. A post the server refuses with a 4xx other
   * than an ended lease rejects the file (the reason is kept); an
   * unreachable server or a 5xx leaves it for the next pass.
   *
   * Posts never overlap: a call made while one runs (the keeper's tick and
   * the flush after the agent ended) waits for it, so a file is posted once.
   *
   * @throws RunnerApiError when the lease has ended (409 on `lease`).
   */
  post(now: () => Date = () => new Date()): Promise<Pick<RelayResult, 'posted' | 'rejected' | 'attached'>> {
    const next = this.posting.then(
      () => this.postOnce(now),
      () => this.postOnce(now),
    );
    this.posting = next;
    return next;
  }

  private posting: Promise<unknown> = Promise.resolve();

  private async postOnce(now: () => Date): Promise<Pick<RelayResult, 'posted' | 'rejected' | 'attached'>> {
    const result: Pick<RelayResult, 'posted' | 'rejected' | 'attached'> = { posted: [], rejected: [] };
    let names: string[];
    try {
      names = await fsp.readdir(this.outbox);
    } catch {
      return result;
    }
    for (const name of names.sort()) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const key = name.slice(0, -'.json'.length);
      const file = path.join(this.outbox, name);
      const reject = async (reason: string) => {
        await writeAtomic(path.join(this.outbox, 'rejected', name), { key, reason, file: await fsp.readFile(file, 'utf8').catch(() => '') });
        await fsp.rm(file, { force: true });
        result.rejected.push({ key, reason });
      };
      if (!OUTBOX_KEY_PATTERN.test(key)) {
        await reject(`the key ${JSON.stringify(key)} is not a file name stem of letters, digits, '.', '_', '-'`);
        continue;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(await fsp.readFile(file, 'utf8'));
      } catch (error) {
        await reject(`not JSON (${jsonErrorOf(error)}): ${COMMENT_SHAPE}`);
        continue;
      }
      if (typeof parsed === 'object' && parsed !== null && 'artifact' in parsed) {
        const refused = await this.attach(key, (parsed as { artifact: unknown }).artifact, result);
        if (refused) await reject(`${refused}: ${ARTIFACT_SHAPE}`);
        continue;
      }
      const problem = commentProblem(parsed);
      if (problem) {
        await reject(`${problem}: ${COMMENT_SHAPE}`);
        continue;
      }
      const comment = parsed as { body: string; blocking?: unknown };
      const blocking = comment.blocking === true;
      try {
        const posted = await this.client.postComment(this.goal, { body: comment.body, blocking, lease: this.lease });
        const sent: SentComment = { key, body: comment.body, blocking, comment: posted.comment.id, posted_at: now().toISOString() };
        await writeAtomic(path.join(this.outbox, 'sent', name), sent);
        await fsp.rm(file, { force: true });
        result.posted.push(sent);
      } catch (error) {
        if (!(error instanceof RunnerApiError)) throw error;
        if (error.leaseEnded) throw error;
        if (error.status >= 400 && error.status < 500) await reject(oneLine(error.message));
        // unreachable or 5xx: tried again next pass
      }
    }
    return result;
  }

  /**
   * Attaches an artifact the agent asked for (`{"artifact": {"kind": "link",
   * "name": …, "url": …}}` — a pull request — or `{"kind": "file", "name":
   * …, "path": …}`, a file inside the work directory) with the lease, and
   * moves its outbox file to `outbox/attached/`. A link's URL is what the agent
   * said; pak2 checks it is an http(s) URL, not what it points to.
   *
   * @returns why it was refused, or undefined when attached (or left for the next pass: the server was out of reach).
   * @throws RunnerApiError when the lease has ended.
   */
  private async attach(key: string, artifact: unknown, result: Pick<RelayResult, 'posted' | 'rejected'> & { attached?: string[] }): Promise<string | undefined> {
    if (!this.artifacts) return 'this relay takes no artifacts';
    if (typeof artifact !== 'object' || artifact === null) return '"artifact" is not an object';
    const a = artifact as { kind?: unknown; name?: unknown; url?: unknown; path?: unknown };
    if (typeof a.name !== 'string' || !a.name) return 'no "name"';
    let body: Parameters<RunnerClient['attachArtifact']>[1];
    if (a.kind === 'link') {
      if (typeof a.url !== 'string') return 'a link has a "url"';
      body = { lease: this.lease, name: a.name, kind: 'link', url: a.url };
    } else if (a.kind === 'file') {
      if (typeof a.path !== 'string' || !a.path) return 'a file has a "path" inside the work directory';
      const full = path.resolve(this.artifacts.workdir, a.path);
      const inside = path.relative(this.artifacts.workdir, full);
      if (inside.startsWith('..') || path.isAbsolute(inside)) return `"path" ${JSON.stringify(a.path)} is outside the work directory`;
      let content: Buffer;
      try {
        content = await fsp.readFile(full);
      } catch (error) {
        return `"path" ${JSON.stringify(a.path)}: ${oneLine((error as Error).message, 120)}`;
      }
      body = { lease: this.lease, name: a.name, kind: 'file', content: content.toString('base64'), encoding: 'base64' };
    } else return '"kind" is link or file';
    try {
      await this.client.attachArtifact(this.artifacts.runId, body);
    } catch (error) {
      if (!(error instanceof RunnerApiError)) throw error;
      if (error.leaseEnded) throw error;
      if (error.status >= 400 && error.status < 500) return oneLine(error.serverError ?? error.message);
      return undefined; // unreachable or 5xx: tried again next pass
    }
    const file = path.join(this.outbox, `${key}.json`);
    await writeAtomic(path.join(this.outbox, 'attached', `${key}.json`), { key, artifact: a.name, kind: a.kind, attached_at: new Date().toISOString() });
    await fsp.rm(file, { force: true });
    (result.attached ??= []).push(a.name);
    return undefined;
  }

  /**
   * Writes the answers among `comments` to the inbox: for each posted
   * comment with no answer yet, the first comment that `answers` it goes to
   * `$PAK2_INBOX/<key>.json` (written then renamed into place).
   */
  async deliver(comments: readonly CommentRecord[]): Promise<RelayResult['answered']> {
    const answered: RelayResult['answered'] = [];
    const pending = this.unanswered();
    if (pending.length === 0) return answered;
    for (const sent of pending) {
      const answer = comments.find((c) => c.answers === sent.comment);
      if (!answer) continue;
      await writeAtomic(path.join(this.inbox, `${sent.key}.json`), answer);
      answered.push({ key: sent.key, answer });
    }
    return answered;
  }

  /** Asks the garden for the thread and delivers the answers in it (used when heartbeat answers may have been missed). */
  async poll(): Promise<RelayResult['answered']> {
    if (this.unanswered().length === 0) return [];
    const { comments } = await this.client.comments(this.goal);
    return this.deliver(comments);
  }
}
