#!/usr/bin/env node
// A scripted agent for the `command` driver: keeps talking, never finishes,
// and ignores SIGINT and SIGTERM (only SIGKILL ends it), as does the
// grandchild it leaves in its process group. FAKE_AGENT_PIDFILE receives
// "<own pid> <grandchild pid>".
import { spawn } from 'node:child_process';
import fs from 'node:fs';

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});
try {
  fs.readFileSync(0);
} catch {
  // no stdin
}
const child = spawn(process.execPath, ['-e', "for (const s of ['SIGINT','SIGTERM','SIGHUP']) process.on(s, () => {}); setInterval(() => {}, 1000);"], { stdio: 'ignore' });
if (process.env.FAKE_AGENT_PIDFILE) fs.writeFileSync(process.env.FAKE_AGENT_PIDFILE, `${process.pid} ${child.pid}\n`);
setInterval(() => process.stdout.write('still working, whatever you say\n'), 200);
