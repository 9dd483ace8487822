import { metricsEnabled, queryWait } from '../metrics/registry.js';
import { ApiError } from '../core/errors.js';

interface Group {
  running: number;
  waiting: (() => void)[];
}

/**
 * The Query API's slots of one process, shared fairly between organizations: at most `total` tasks
 * run at once (so queries cannot take every connection of the pool), at most `perGroup` of them for
 * one organization (so one organization's heavy queries always leave slots to the others), and a
 * freed slot goes to the organizations with waiting tasks in turn, not in arrival order (so an
 * organization that queued many tasks does not push another's one task behind all of them). At most
 * `maxWaiting` tasks of one organization wait; one more is refused at once with a 429, as PostHog
 * refuses a query over its concurrency limit.
 *
 * The share holds within a process: N API processes let an organization run N × `perGroup` queries.
 */
export class FairLimiter {
  private running = 0;
  private readonly groups = new Map<string, Group>();
  /** Groups with waiting tasks, in the order they are next served. */
  private readonly turns: string[] = [];

  constructor(
    private readonly total: number,
    private readonly perGroup: number,
    private readonly maxWaiting: number,
  ) {}

  /** Throws the 429 that `run` would throw for `group` now (a full queue), without queueing anything. */
  check(group: string): void {
    const g = this.groups.get(group);
    if (g && g.waiting.length >= this.maxWaiting && !this.canStart(g)) {
      throw ApiError.throttled(
        1,
        `Too many queries of this organization are waiting to run (${this.maxWaiting}). ` +
          'Try again when some have finished.',
      );
    }
  }

  /** Runs `fn` in a slot of `group`, waiting for its turn first. */
  async run<T>(group: string, fn: () => Promise<T>): Promise<T> {
    this.check(group);
    let g = this.groups.get(group);
    if (!g) this.groups.set(group, (g = { running: 0, waiting: [] }));
    // After every dispatch a free slot means every waiting group is at its own limit: start at once.
    // A query that starts at once is observed too (no wait), so the histogram tells what share waited.
    const queued = performance.now();
    if (this.canStart(g)) this.start(g);
    else {
      await new Promise<void>((resolve) => {
        g.waiting.push(resolve);
        if (g.waiting.length === 1) this.turns.push(group);
        this.dispatch();
      });
    }
    if (metricsEnabled()) queryWait.observe((performance.now() - queued) / 1000);
    try {
      return await fn();
    } finally {
      g.running--;
      this.running--;
      if (!g.running && !g.waiting.length) this.groups.delete(group);
      this.dispatch();
    }
  }

  /** Tasks running and waiting, for tests and metrics. */
  stats(): { running: number; waiting: number } {
    let waiting = 0;
    for (const g of this.groups.values()) waiting += g.waiting.length;
    return { running: this.running, waiting };
  }

  private canStart(g: Group): boolean {
    return this.running < this.total && g.running < this.perGroup;
  }

  private start(g: Group): void {
    g.running++;
    this.running++;
  }

  /** Gives free slots to waiting groups in turn, skipping a group at its own limit. */
  private dispatch(): void {
    for (let i = 0; i < this.turns.length && this.running < this.total; ) {
      const name = this.turns[i]!;
      const g = this.groups.get(name)!;
      if (g.running >= this.perGroup) {
        i++;
        continue;
      }
      const next = g.waiting.shift()!;
      this.start(g);
      this.turns.splice(i, 1);
      // Served: to the back of the line if it has more waiting.
      if (g.waiting.length) this.turns.push(name);
      next();
    }
  }
}
