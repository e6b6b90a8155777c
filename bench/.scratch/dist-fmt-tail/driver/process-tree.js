import fs from 'node:fs';
/**
 * The environment variable every agent process of a run inherits, with a
 * value unique to one launch. Agent CLIs start tool commands in new sessions
 * (claude's Bash tool uses setsid; codex's sandbox too), out of reach of a
 * process-group kill, and orphans lose their parent link; the inherited mark
 * finds them all. Its name avoids KEY/SECRET/TOKEN, which codex strips.
 */
export const RUN_MARK_ENV = 'PAK2_RUN_MARK';
/**
 * Pids of live processes whose environment carries `PAK2_RUN_MARK=<mark>`
 * (Linux `/proc`; elsewhere an empty list, and the group kill is all there is).
 */
export function markedProcesses(mark) {
    const needle = `${RUN_MARK_ENV}=${mark}\0`;
    const pids = [];
    let names;
    try {
        names = fs.readdirSync('/proc');
    }
    catch {
        return pids;
    }
    for (const name of names) {
        if (!/^\d+$/.test(name) || Number(name) === process.pid)
            continue;
        try {
            if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').includes(needle))
                pids.push(Number(name));
        }
        catch {
            // exited meanwhile, or not readable
        }
    }
    return pids;
}
/** Sends `signal` to a process group (negative pid); quiet when it is gone. */
export function signalGroup(pgid, signal) {
    if (!pgid)
        return;
    try {
        process.kill(-pgid, signal);
    }
    catch {
        // the group is already gone
    }
}
/** SIGKILLs the process group and every process carrying the run's mark. */
export function killRunProcesses(pgid, mark) {
    signalGroup(pgid, 'SIGKILL');
    for (const pid of markedProcesses(mark)) {
        try {
            process.kill(pid, 'SIGKILL');
        }
        catch {
            // gone
        }
    }
}
//# sourceMappingURL=process-tree.js.map