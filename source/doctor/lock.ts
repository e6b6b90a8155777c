import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import { lockPaths } from '../coordinator/lock.js';
import { isErrno } from '../errors.js';
import { processAlive } from '../proc.js';
import { coordinatorPresence, LOCK_STALE_MS } from './presence.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/**
 * The coordinator lock `<runtime-root>/coordinator.lock` and its holder
 * `<runtime-root>/coordinator.holder.json`. With a coordinator holding the
 * garden there is nothing to say. Without one, a lock directory or holder
 * file left behind is stale: its holder on this host is dead (or its pid now
 * belongs to another process, since a live coordinator always answers on its
 * socket), or its holder on another host stopped refreshing it.
 * Fix: remove the (empty) lock directory and move the holder file aside, only
 * when, checked again just before, still no coordinator answers.
 */
export function checkLock(ctx: DoctorContext): Problem[] {
  const { presence, garden } = ctx;
  if (presence.held) return [];
  const files = lockPaths(garden.paths);
  const hasLock = presence.lockMtimeMs !== undefined;
  const holder = presence.holderFile;
  if (!hasLock && holder === undefined) return [];

  let why: string;
  if (holder === undefined) why = 'no holder file, and no coordinator answers on the socket';
  else if (holder === 'malformed') why = `the holder file ${files.holder} is malformed, and no coordinator answers on the socket`;
  else if (holder.host !== os.hostname()) {
    const age = hasLock ? `${Math.round((Date.now() - presence.lockMtimeMs!) / 1000)} s ago` : 'never (there is no lock directory)';
    why = `its holder, pid ${holder.pid} on host ${holder.host}, last refreshed it ${age} (stale after ${LOCK_STALE_MS / 1000} s)`;
  } else if (processAlive(holder.pid)) {
    why = `its holder pid ${holder.pid} (${holder.command}, since ${holder.started_at}) is alive but is not this garden's coordinator: nothing answers on the coordinator socket (the pid was reused)`;
  } else {
    why = `its holder pid ${holder.pid} (${holder.command}, since ${holder.started_at}) is not running`;
  }
  const what = hasLock ? 'the coordinator lock is left over' : 'a holder file is left over without a lock directory';
  const parts = [hasLock ? 'remove the lock directory' : undefined, holder !== undefined ? 'move the holder file aside' : undefined].filter(Boolean);
  return [
    {
      check: 'lock',
      file: hasLock ? files.lock : files.holder,
      message: `${what}: ${why}`,
      fix: parts.join(' and '),
      repair: async (c) => {
        const again = await coordinatorPresence(c.garden.paths);
        if (again.held) throw new NotFixed(`a coordinator holds the garden now: ${again.heldBy}`);
        const done: string[] = [];
        try {
          await fsp.rmdir(files.lock);
          done.push('removed the lock directory');
        } catch (error) {
          if (isErrno(error, 'ENOTEMPTY') || isErrno(error, 'EEXIST')) done.push(`moved the lock directory aside to ${await c.aside.move(files.lock)}`);
          else if (!isErrno(error, 'ENOENT')) throw error;
        }
        if (fs.existsSync(files.holder)) done.push(`moved the holder file aside to ${await c.aside.move(files.holder)}`);
        return done.join('; ') || 'nothing was left to remove';
      },
    },
  ];
}
