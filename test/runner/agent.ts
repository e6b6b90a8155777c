import fs from 'node:fs';
import path from 'node:path';

/**
 * A shell-script agent for the `command` driver in the runner's tests. Its
 * main turn records its environment in `$PAK2_RUN_DIR/agent-env`, writes
 * `made-by-agent.txt` and the plant's memory in its working directory,
 * optionally writes two outbox files that are not comments
 * (AGENT_BAD_OUTBOX: JSON over several lines that does not parse, and an
 * empty body), asks a question through `$PAK2_OUTBOX` and waits, silent,
 * for its answer in `$PAK2_INBOX` (AGENT_ASK=1), or through `pak2 comment
 * --blocking --wait` (AGENT_PAK2_ASK: the CLI's script, AGENT_NODE: node),
 * keeps silent (AGENT_SILENT seconds) or keeps working (AGENT_SLEEP
 * seconds, a line a second; AGENT_UNTIL: until that file exists, a line a second), fails (AGENT_FAIL), then reports a result
 * with a cost. Its reflection turn reports a reflection.
 */
export const AGENT_SCRIPT = `#!/bin/sh
cat > /dev/null
if [ "$PAK2_PHASE" = reflection ]; then
  echo '{"type":"result","status":"success","text":"Learned: the runner ran me.","cost_usd":0.001}'
  exit 0
fi
env | grep '^PAK2_' | sort > "$PAK2_RUN_DIR/agent-env"
echo '{"type":"assistant","text":"working"}'
echo "made by the agent" > made-by-agent.txt
mkdir -p plants/gardener/memory
echo "# Memory" > plants/gardener/memory/MEMORY.md
echo "Remote runs keep their memory." >> plants/gardener/memory/MEMORY.md
if [ -n "$AGENT_BAD_OUTBOX" ]; then
  printf '{\n  "body": "Which branch?",\n  "blocking": yes\n}\n' > "$PAK2_OUTBOX/.bad.tmp"
  mv "$PAK2_OUTBOX/.bad.tmp" "$PAK2_OUTBOX/bad.json"
  printf '{"body": ""}' > "$PAK2_OUTBOX/.empty.tmp"
  mv "$PAK2_OUTBOX/.empty.tmp" "$PAK2_OUTBOX/empty.json"
fi
if [ -n "$AGENT_ASK" ]; then
  printf '{"body":"Which branch?","blocking":true}' > "$PAK2_OUTBOX/.q1.tmp"
  mv "$PAK2_OUTBOX/.q1.tmp" "$PAK2_OUTBOX/q1.json"
  i=0
  while [ ! -f "$PAK2_INBOX/q1.json" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
  cp "$PAK2_INBOX/q1.json" "$PAK2_RUN_DIR/answer.json" 2>/dev/null
fi
if [ -n "$AGENT_PAK2_ASK" ]; then
  "$AGENT_NODE" "$AGENT_PAK2_ASK" comment "$PAK2_GOAL_ID" --blocking --wait 30 "Which branch, asked with pak2 comment?" > "$PAK2_RUN_DIR/answer.txt" 2> "$PAK2_RUN_DIR/comment.err"
fi
if [ -n "$AGENT_SILENT" ]; then
  sleep "$AGENT_SILENT"
fi
if [ -n "$AGENT_SLEEP" ]; then
  i=0
  while [ $i -lt "$AGENT_SLEEP" ]; do echo '{"type":"assistant","text":"still working"}'; sleep 1; i=$((i+1)); done
fi
if [ -n "$AGENT_UNTIL" ]; then
  while [ ! -e "$AGENT_UNTIL" ]; do echo '{"type":"assistant","text":"still working"}'; sleep 1; done
fi
if [ -n "$AGENT_FAIL" ]; then
  echo "something broke" >&2
  exit 4
fi
echo '{"type":"result","status":"success","text":"done","cost_usd":0.0123,"session_id":"s-1","num_turns":2}'
`;

/** Writes the agent script into `dir` (mode 0755) and returns its path. */
export function writeAgent(dir: string, name = 'agent.sh'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, AGENT_SCRIPT, { mode: 0o755 });
  return file;
}
