import type { LandingRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { landOne } from '../landing/index.js';

/** How long a `waiting` landing waits before the queue looks at the operator's checkout again, ms. */
export const WAITING_RETRY_MS = 5000;

/**
 * The coordinator's merge queue worker (docs/landing/level2.md, "The merge
 * queue"): lands one landing at a time in the background, so a verify of
 * several minutes never holds a reconcile pass; a `waiting` landing is
 * looked at again at most every {@link WAITING_RETRY_MS}.
 */
export class Lander {
  private running: Promise<void> | undefined;
  private readonly tried = new Map<string, number>();

  constructor(
    private readonly garden: Garden,
    private readonly env: NodeJS.ProcessEnv,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** True while a landing is under way. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  /** Whether the queue may take `landing` now (a waiting one only after its pause). */
  ready(landing: LandingRecord): boolean {
    if (landing.state !== 'waiting') return true;
    return this.now().getTime() - (this.tried.get(landing.run) ?? 0) >= WAITING_RETRY_MS;
  }

  /** Lands `landing` in the background; resolves when this step of it ended. */
  land(landing: LandingRecord): Promise<void> {
    this.tried.set(landing.run, this.now().getTime());
    const work = landOne(this.garden, landing, this.env, this.now).then(
      () => undefined,
      () => undefined,
    );
    this.running = work.finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Waits for the landing under way, if any (a stop). */
  async idle(): Promise<void> {
    await this.running;
  }
}
