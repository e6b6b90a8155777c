import { useEffect, useState } from 'react';
import { AGE_TICK_MS } from '../../format.js';

/**
 * The time the panes show, ticking every 250 ms while a run is live (the
 * spinner, the elapsed time) and otherwise as often as a printed age can
 * change ({@link AGE_TICK_MS}, a second); `fixed` stops it
 * (tests). A hook of its own, outside the App: a closure made in the App's
 * body keeps that render's whole scope, its snapshot included, for as long
 * as the closure lives, and an interval lives long.
 */
export function useClock(fixed: number | undefined, live: boolean): number {
  const [clock, setClock] = useState(() => fixed ?? Date.now());
  useEffect(() => {
    if (fixed !== undefined) return;
    const timer = setInterval(() => setClock(Date.now()), live ? 250 : AGE_TICK_MS);
    return () => clearInterval(timer);
  }, [fixed, live]);
  return fixed ?? clock;
}
