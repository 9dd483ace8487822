import type { FastifyBaseLogger } from 'fastify';

/** Why the listener cut a client off or turned it away. */
export type AbortCause =
  | 'request_timeout'
  | 'slow_body'
  | 'connection_cap'
  | 'address_connection_cap'
  | 'forwarded_client_cap'
  | 'health_only_connection'
  | 'client_gone'
  | 'decode_queue_full';

/**
 * Counts cut-off and refused clients and logs them once per cause per interval: the first of a
 * cause at once, the rest as one summary line when the interval ends. A flood of thousands of
 * sockets then writes a handful of lines, not one each.
 */
export class AbortLog {
  private counts = new Map<AbortCause, number>();
  private timer: NodeJS.Timeout | undefined;
  /** Every count since start, for tests and operators' eyes in the summary. */
  readonly totals = new Map<AbortCause, number>();

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs: number,
  ) {}

  count(cause: AbortCause, detail?: Record<string, unknown>): void {
    this.totals.set(cause, (this.totals.get(cause) ?? 0) + 1);
    const n = (this.counts.get(cause) ?? 0) + 1;
    this.counts.set(cause, n);
    if (n === 1) {
      this.log.warn(
        { cause, ...detail },
        `cut off a client (${cause}); more of this cause are summed up every ${this.intervalMs / 1000} s`,
      );
    }
    this.timer ??= setTimeout(() => this.flush(), this.intervalMs).unref();
  }

  /** Logs what was counted past each cause's first, and starts a new interval. */
  flush(): void {
    this.timer = undefined;
    const more = Object.fromEntries([...this.counts].filter(([, n]) => n > 1).map(([cause, n]) => [cause, n - 1]));
    this.counts.clear();
    if (Object.keys(more).length) {
      this.log.warn({ cut_off: more }, `cut off more clients in the last ${this.intervalMs / 1000} s`);
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.flush();
  }
}
