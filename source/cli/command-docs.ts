/**
 * What each command does, in the words of the README's command table and of
 * `pak2 COMMAND --help` (one text for both: command-table.ts puts it on the
 * command). Markdown: backticks mark code (`--help` leaves them out).
 * Keyed by the top-level command; a command holding subcommands has one
 * text for all of them. A command without an entry fails
 * test/cli/command-table.test.ts.
 */

/** The README's row for bare `pak2`. */
export const WORKBENCH_ROW = {
  synopsis: ['pak2'],
  description: 'the workbench (see above): the coordinator and its panes in this terminal, as `pak2 cycle` in a terminal',
} as const;

/** Each top-level command's description (Markdown), by name. */
export const COMMAND_DOCS: Readonly<Record<string, string>> = {
  init:
    "create a garden in DIR (default `.`): a new or empty DIR gets the whole template; the top of your own git repository is adopted (`PAK2.toml`, `.pak2/`, `.runtime/` ignored in `.git/info/exclude`; nothing of yours touched); `--name` the garden's name, `--driver` its default driver (`docs/startup/level2.md`)",
  genesis:
    'check prerequisites, create runtime dirs, commission the gardener, queue its first goal; changes nothing the second time',
  publish:
    "write pak2's clean authored export (code, tests, docs, garden template, fresh `.gitignore` and `PAK2.toml`) into a new or empty DIR or over the worktree of a git checkout, keeping its `.git`; runs no git command (`docs/publish/level2.md`)",
  submit:
    `queue a goal; prints its id (\`--body-file -\` reads stdin); \`--after\` (repeatable) makes it wait until those goals closed success (\`docs/goal/level2.md\`, "Dependencies"); \`--budget\` caps its spend in USD across its attempts. Any guard flag queues a guarded goal (seed 001, \`docs/guarded-runs/level2.md\`) and writes the goal's \`guard\` with exactly the fields given (\`--guard\` alone: only the \`[guard]\` defaults of PAK2.toml, merged at dispatch): \`--verify\` must exit 0 for the run to succeed, \`--allow\` / \`--forbid\` are globs relative to the garden root (repeatable; a change outside them is rolled back), \`--verify-timeout\` the verify limit in seconds, \`--pass-env\` a variable passed through to the agent and verify and redacted in every artifact (repeatable), \`--no-redact\` keeps artifacts unredacted; \`--task-class\` routes the goal through \`[routing.NAME]\`'s tiers. Refused with one line naming the flag: a guarded or routed goal in a garden that is not in a git repository (exit 1), a class not in \`[routing]\` (the configured ones are listed), an empty glob, an absolute one or one with a \`..\` segment, an environment variable name that is not one (exit 2)`,
  cancel:
    'cancel a goal: a queued one closes `cancelled`; a running one has its run stopped, then closes `cancelled`',
  depends:
    'change what a queued goal waits for: `--drop` an edge (a goal a failed dependency blocked is released), `--add` one (an unknown goal or a cycle is refused in one line, exit 1)',
  retry:
    'queue a goal that closed `failure` or `cancelled` again, as a new goal with its body, plant, type, settings and dependencies and `retry_of` naming it (the old goal stays closed); `--driver` / `--model` run it on another driver or model (a new driver drops the old model); the goals that waited for it wait for the new one (a blocked chain runs once the retry succeeds); an open goal, one that closed success, or one whose retry is still open is refused in one line, exit 1; `r` in the workbench (`docs/goal/level2.md`, "Retry")',
  stop:
    'stop one live run: it ends `killed` / `operator_stopped` with what its stream said; its goal closes `cancelled`, or goes back to the queue with `--requeue`; works with the coordinator running (over its socket) or not (the run is swept and closed)',
  chat:
    'talk with the garden: each message queues a `converse` goal the coordinator answers, resuming one agent session; `-m` sends one message and prints the reply (`--no-wait`: not even that), else it reads lines from the terminal',
  supplement:
    'add context to a queued conversation-origin goal (frozen into its dispatch packet)',
  inbox:
    "what the workbench's inbox pane shows: the open questions goals wait on (answer with `pak2 comment GOAL --answer`), then the reply notes (replies, startup notes, retrospective reports) newest first, unread ones marked `●`; `--unread` leaves out the notes already read; `read` prints one note whole and marks it read as opening it in the pane does (NOTE: its name, or a prefix only it has; none: the oldest unread) (`docs/workbench/level2.md`)",
  cycle:
    'run the coordinator: the workbench in a terminal; headless (`--no-ui`, or no terminal) one line per lifecycle event (JSON with `--json`); `--until-idle` exits once nothing more can be dispatched here or is running (anywhere: remote runs count; with `max_concurrent_runs = 0` queued goals wait for runners and do not keep it); `--serve` runs `pak2 serve` on the same session (`--host`, `--port`)',
  dashboard:
    'the workbench panes, read-only: no coordinator, no writes (one frame when not a terminal)',
  goals:
    'open goals, then the 20 most recently closed (`--all`: every one)',
  runs:
    "runs with status, driver, model, time, cost, failure reason (`--goal`: one goal's)",
  show:
    "a goal with its runs, or a run with cost, session, a runner's artifacts, reflection and final text",
  logs:
    `a run's stream as the workbench's run pane renders it (assistant text, tool calls, results, errors, cost and tokens), between a line naming the run and one saying how it ended; \`--raw\` the stream's own lines (\`| jq\`); \`-f\` follows a live run until it closes; a goal id means its latest run (\`-f\` waits for its first); the store's copy on a PostgreSQL garden, so a runner's run too (\`docs/run/level2.md\`, "Reading a run's stream")`,
  trace:
    'what a guarded run did: the phase timeline with durations, the decision and diagnostic, violations, verify result, the five mutation lists, rollback and `rejected.patch`, routing attempts with their costs and stop reason; `--json` prints `{envelope, outcome, phases, problems}`; a run that is not guarded exits 1; a malformed guard file is named (file and field) and exits 1 (`docs/guarded-runs/level2.md`)',
  history:
    'runtime provenance of closed runs: the authored HEAD and clean/dirty tree at close, and the runtime commit that recorded it (`docs/runtime-history/level2.md`)',
  'operator-message':
    "for the gardener's runs: a validated tend survey or recently-concluded note for the operator (`--body`, `--body-file`, or `--json-file` with the whole message)",
  plants:
    'plants with seed, status, when commissioned and how many active threads',
  plant:
    "`commission` a plant from `seeds/SEED.md` (creates `plants/NAME/`, copies the seed's skills and knowledge); `propose` queues a commissioning goal instead: the gardener commissions NAME from SEED and queues its first bounded goal (`docs/plant/level2.md`); `archive` archives a plant (its files stay)",
  threads:
    "a plant's active threads, from `plants/PLANT/memory/active-threads.json` (`docs/active-threads/level2.md`)",
  retrospective:
    'queue a manual retrospective of the goals closed in the window (`--since`: `7d` or an ISO time; default the last 7 days) for the gardener (or `--plant`); prints its id; the plant writes its report as a reply note (`pak2 inbox`); one open retrospective per plant (`docs/retrospective/level2.md`)',
  doctor:
    "check the garden: PAK2.toml, goal files and the closed ledger, run records against their seals, running runs, remote runners' leases (damaged, left active, expired and unreaped, stale lease locks, goals a finish left unsettled), plants, schedules.json, the event log, the coordinator lock, orphan agent processes, the runtime git repo, whether git ignores the runtime root; on a PostgreSQL garden the store instead of the goal, run, lease and event files (its schema version, stuck leases, orphaned runs); each check on a line with its result (`[✓]`, `[✗]`, `[-]` not run), and under it one line per finding with the file, field and fix; exit 1 when anything is found; `--fix` makes the safe fixes and never deletes a record (damaged files move to `<runtime-root>/doctor/<timestamp>/`) (`docs/doctor/level2.md`)",
  events:
    "the event log: everything after event ID (a ULID), then (`--follow`) new events as they come; the cursor is found by seeking, whatever the log's size (`docs/events/level2.md`)",
  serve:
    'the garden over HTTP (fastify, 127.0.0.1:7717; an address beyond loopback only with `--host`): REST under `/api/v1`, server-sent events resuming from `Last-Event-ID`, GraphQL at `/api/v1/graphql` (queries, the operator actions as mutations, an `eventAdded(since:)` subscription over graphql-sse; schema in `docs/server/schema.graphql`), an OpenAPI description, signed webhook delivery; bearer token in `<runtime-root>/serve/token` (`docs/server/level2.md`)',
  comment:
    "a goal's comment thread (seed 004): post (TEXT, or `-` for stdin); `--blocking` asks a question the goal waits on (`blocked` until answered; `--wait` prints the answer); `--answer` answers the open question (the oldest, or ID) and returns the goal to `running` or `queued`; no TEXT prints the thread. An agent's own comment is `agent:<run>` (under a runner it goes through the runner)",
  runner:
    "run goals from a garden's `pak2 serve` on this machine (seed 004, `docs/runners/level2.md`): claim a goal under a lease, run the agent with pak2's own driver code in a checkout of the garden (`--workdir`), heartbeat with progress and a status line, upload the stream, attach the diff, the prompt and what the agent attaches (a pull-request link, a file), write back changed plant documents, and finish with the observed outcome; a runner killed mid-run and restarted with the same `--state` resumes; one whose lease expires leaves its run `abandoned` and its goal requeued; `--server` and `--token-file` are required",
  diff:
    "a run's work for review: its files and the patch against the base it started from (its landing's commit, what its worktree holds now, or its kept branch; `docs/landing/level2.md`)",
  land:
    `accept a run's work held for review (\`[merge] mode = "review"\`): the coordinator lands it, or this command does when none runs`,
  reject:
    "discard a run's work: its landing ends `rejected`, its goal closes `failure` or goes back to the queue; the comment goes to the next attempt's prompt",
  landings:
    "the merge queue: each landing's run, state (`queued`, `awaiting review`, `landing`, `waiting`, `landed`, `conflict`, `rejected`, `failed`), files, base, age",
  attention:
    'what needs you, newest first, one line each: open questions, landings awaiting review, budget stops, failed or killed runs and blocked goals not yet acknowledged; `nothing needs you` when empty (`docs/attention/level2.md`)',
  ack:
    'acknowledge needs-you items (IDS as `pak2 attention` lists them, or `--all`): they leave the list (`attention.json`, an `AttentionAcknowledged` event each); an id not on the list is one line, exit 1',
  token:
    'server tokens with a role (`--role operator|runner|read`): an operator token may do everything, a runner token (one per runner machine; it names the runner) only claim and report on its own leases, a read token only read and stream events; printed once, kept hashed in `<runtime-root>/serve/tokens.json`, revoked at once on a running server; the threat model in `docs/server/level2.md`',
  budget:
    "budget caps in USD (`[budget]` in PAK2.toml: per run, goal, plant per day, garden per day and month): each cap's amount, what was spent and reserved against it, what is left, the live runs' spend so far and the goals a cap holds; `set CAP USD|off|config` raises, lowers or lifts one over PAK2.toml (`<runtime-root>/budget.json`; `config` goes back to PAK2.toml's) and the coordinator looks again; a run past its cap is stopped `killed` / `budget_exceeded`; `pak2 submit --budget USD` caps one goal (`docs/budget/level2.md`)",
  schedule:
    "goals submitted on a cron line (`[[schedule]]` in PAK2.toml): each firing submits one goal (`ScheduleFired`), none while the schedule's last goal is open (unless `--overlap allow`), firings missed while no coordinator ran caught up by one goal; `add` appends one block to PAK2.toml (checked as a load checks it; a bad value is one line naming the key, exit 1), `remove` takes exactly that block out; the rest of the file is untouched; state in `<runtime-root>/schedules.json` (`docs/schedules/level2.md`)",
  store:
    `move a garden between its files and PostgreSQL (\`docs/store/level2.md\`, "Moving between stores"): \`import\` loads a file garden's goals, runs, events, leases and comments into an empty store in one transaction (a store that holds anything, or damaged records, are refused in one line naming them); \`export\` writes a store's records into a new or empty DIR in the seeds' exact layout, byte for byte what the file store writes; \`status\` says where the store is (password hidden), its schema version against this pak2's, its record counts and problems. The store is \`--url\`, else \`PAK2_STORE_URL\`, else \`[store].url\``,
  webhook:
    'webhook subscriptions: each matching event POSTed in order, signed (HMAC-SHA256), retried with backoff, every attempt logged, delivered while any coordinator (the workbench, `pak2 cycle`) or `pak2 serve` runs; `redeliver` resends what was given up on; no credentials in a URL, no link-local or metadata address (`docs/server/level2.md`)',
  tend:
    'automatic tends (a gardener goal after a failed run, or for queued goals that cannot dispatch): each trigger on or off (`[tend]` in PAK2.toml), their priority, the daily cap and how many were queued today; `pause` holds them all (kept across restarts, `t` in the workbench) until `resume`; a tend held back is a `TendWithheld` event (`docs/automatic-tend/level2.md`)',
};
