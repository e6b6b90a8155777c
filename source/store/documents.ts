/**
 * The runtime records kept as store documents (docs/store/level2.md): for a
 * garden with a store attached ({@link storeOf}), each record file of the
 * seeds' layout below is one document `(kind, key)`, and each append-only
 * JSONL file is the lines of one `(kind, parent)`. The file each stands for
 * (relative to the runtime root) is given here, for an export that writes
 * the layout back and an import that reads it.
 */

/** A singleton record's key (budget.json, schedules.json, …: one per garden). */
export const GARDEN_KEY = 'garden';

/** Document kinds: kind → the file a document of it stands for, from its key. */
export const DOCUMENT_FILES = {
  /** key: conversation id. */
  conversation: (key: string) => `conversations/${key}/meta.json`,
  /** key: `<garden name>/<note file name>`; record {@link StoredNote} (Markdown text, not JSON). */
  'inbox-note': (key: string) => `inbox/${key}`,
  /** key: garden name. */
  'inbox-read': (key: string) => `inbox/${key}/.read.json`,
  /** key: `<garden name>/<operator message id>`; record {@link StoredNote}. */
  'operator-note': (key: string) => `inbox/${key.replace('/', '/operator/')}.md`,
  /** key: run id. */
  'dispatch-packet': (key: string) => `runs/${key}/dispatch-packet.json`,
  /** key: `<run id>/<artifact name>`; record {@link StoredContent}. */
  'artifact-content': (key: string) => `runs/${key.replace('/', '/artifacts/')}`,
  /** key: run id. */
  landing: (key: string) => `landings/${key}.json`,
  budget: () => 'budget.json',
  'budget-warned': () => 'budget.warned.json',
  schedules: () => 'schedules.json',
  attention: () => 'attention.json',
  'coordinator-blocked': () => 'coordinator.blocked.json',
  'tend-attention': () => 'coordinator.tend-attention.json',
  'tend-withheld': () => 'coordinator.tend-withheld.json',
  tend: () => 'tend.json',
  'webhook-subscriptions': () => 'webhooks/subscriptions.json',
  /** key: subscription id; record {@link StoredNote}'s `text` is the secret file's. */
  'webhook-secret': (key: string) => `webhooks/secrets/${key}`,
  /** key `tokens.json` (source/server/tokens.ts): the named tokens `pak2 token create` made, hashed; each server's `serve/token` stays a file. */
  tokens: () => 'serve/tokens.json',
  /** key: invocation id. */
  'dashboard-invocation': (key: string) => `dashboard/invocations/${key}.json`,
} as const satisfies Record<string, (key: string) => string>;

/** Line kinds: kind → the JSONL file whose lines the lines of a parent are. */
export const LINE_FILES = {
  /** parent: conversation id. */
  'conversation-message': (parent: string) => `conversations/${parent}/messages.jsonl`,
  /** parent: run id. */
  'operator-message': (parent: string) => `runs/${parent}/operator-messages.jsonl`,
  /** parent: goal id. */
  supplement: (parent: string) => `supplements/${parent}.jsonl`,
  /** parent: run id. */
  artifact: (parent: string) => `runs/${parent}/artifacts.jsonl`,
  /** parent: {@link GARDEN_KEY}. */
  'webhook-delivery': () => 'webhooks/deliveries.jsonl',
} as const satisfies Record<string, (parent: string) => string>;

export type DocumentKind = keyof typeof DOCUMENT_FILES;
export type LineKind = keyof typeof LINE_FILES;

/**
 * The `.gitignore` files beside some documents' files, by document kind:
 * the runtime root is a git repository (runtime history commits it), and
 * secrets and tokens never go in. Each is its file (relative to the
 * runtime root) and its lines.
 */
export const DOCUMENT_GITIGNORES = {
  'webhook-secret': { file: 'webhooks/secrets/.gitignore', lines: ['*', '!.gitignore'] },
  tokens: { file: 'serve/.gitignore', lines: ['token', 'tokens.json', 'tokens.json.*', 'tokens.lock', 'serve.log'] },
} as const satisfies Partial<Record<DocumentKind, { file: string; lines: readonly string[] }>>;

/** A text file kept as a document (a Markdown note, a secret): its text and when it was written (the file's mtime). */
export interface StoredNote {
  text: string;
  modified_at: string;
}

/** A binary file kept as a document (an artifact's content): its bytes, base64. */
export interface StoredContent {
  encoding: 'base64';
  content: string;
}

/** How a message names a stored record: the store and the file it stands for. */
export function storedWhere(where: string, file: string): string {
  return `${where}: ${file}`;
}
