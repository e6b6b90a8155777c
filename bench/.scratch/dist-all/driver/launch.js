import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { execa } from 'execa';
import { killRunProcesses, RUN_MARK_ENV, signalGroup } from './process-tree.js';
/**
 * Launches an agent CLI in its own process group, prompt on stdin, stdout
 * appended to `stdoutFile` as it arrives (the watchdog reads that file's
 * mtime), stderr forwarded. Never throws for the agent's own failures: a
 * missing executable is `spawnError`; a stop is `stoppedBy`.
 *
 * A stop sends SIGINT to the group (claude then reports its cost so far and
 * ends its tools), and after `killGraceMs` SIGKILL to the group and to every
 * process marked with this launch's {@link RUN_MARK_ENV}. When the agent
 * exits, the same SIGKILL sweep runs, so no child survives its run.
 */
export async function launch(spec, options) {
    const started = Date.now();
    const out = fs.createWriteStream(options.stdoutFile, { flags: 'a' });
    const mapLine = options.mapLine ?? ((line) => line);
    const onStderr = options.onStderr ?? ((chunk) => process.stderr.write(chunk));
    let stoppedBy;
    let outputBytes = 0;
    let pending = '';
    let killTimer;
    let deadline;
    const mark = randomUUID();
    const child = execa(spec.command, spec.args, {
        cwd: options.cwd,
        env: { ...(options.env ?? process.env), ...spec.env, [RUN_MARK_ENV]: mark },
        extendEnv: false,
        input: options.stdin,
        stdout: 'pipe',
        stderr: 'pipe',
        detached: true,
        reject: false,
        stripFinalNewline: false,
        encoding: 'utf8',
        buffer: false,
    });
    const pid = child.pid;
    const stop = (reason) => {
        if (stoppedBy)
            return;
        stoppedBy = reason;
        signalGroup(pid, 'SIGINT');
        killTimer = setTimeout(() => killRunProcesses(pid, mark), options.killGraceMs ?? 3000);
        killTimer.unref();
    };
    options.onStart?.({ pid, mark, stop });
    if (options.timeoutMs !== undefined) {
        deadline = setTimeout(() => stop('timeout'), options.timeoutMs);
        deadline.unref();
    }
    child.stdout?.on('data', (chunk) => {
        const text = chunk.toString();
        outputBytes += Buffer.byteLength(text);
        pending += text;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        if (lines.length > 0)
            out.write(lines.map((l) => `${mapLine(l)}\n`).join(''));
    });
    child.stderr?.on('data', (chunk) => onStderr(chunk.toString()));
    const result = await child;
    if (deadline)
        clearTimeout(deadline);
    if (pending)
        out.write(`${mapLine(pending)}\n`);
    await new Promise((resolve) => out.end(resolve));
    // Reap what the agent left behind, in its group or in sessions of their own.
    killRunProcesses(pid, mark);
    if (killTimer)
        clearTimeout(killTimer);
    const spawnError = result.failed && result.exitCode === undefined && !result.signal && !stoppedBy
        ? (result.originalMessage ?? result.shortMessage ?? 'could not start')
        : undefined;
    return {
        exitCode: result.exitCode ?? null,
        signal: result.signal ?? null,
        stoppedBy,
        spawnError,
        outputBytes,
        durationMs: Date.now() - started,
    };
}
//# sourceMappingURL=launch.js.map