import { ApiError } from '../core/errors.js';
import type { Db } from '../db/client.js';
import { hitRateLimit, sweepRateLimits } from './rate-limit-queries.js';

export interface Rate {
  limit: number;
  windowMs: number;
}

/** "480/minute" -> {limit: 480, windowMs: 60000}. */
export function parseRate(text: string): Rate {
  const m = /^(\d+)\/(second|minute|hour|day)$/.exec(text.trim());
  if (!m) throw new Error(`not a rate: ${text} (expected e.g. 480/minute)`);
  const unit = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 }[m[2] as 'second'];
  return { limit: Number(m[1]), windowMs: unit };
}

/** How often a process deletes the counters whose windows have all run out. */
const SWEEP_MS = 60_000;

/**
 * PostHog's personal-API-key throttles: a burst and a sustained limit per key, each a fixed window
 * started by the first request after the previous window ran out. The counters are rows of
 * `rate_limit_counters`, shared by every process on the database, so N server processes together allow
 * exactly the limits: each request is one UPSERT that counts it only if neither window is full (the row
 * locked meanwhile), in the database's clock. A refused request is not counted.
 */
export class RateLimiter {
  private lastSweep = Date.now();

  /**
   * `scope` names this limiter's counters (the same scope in every process shares them); `rates` are its
   * burst and sustained windows.
   */
  constructor(
    private readonly db: Db,
    private readonly scope: string,
    private readonly rates: readonly [Rate, Rate],
  ) {}

  /**
   * Counts one request for `key`, or throws 429 with Retry-After (whole seconds until the full window
   * ends) when a window is full. `now` (milliseconds) stands in for the database's clock in tests.
   */
  async hit(key: string, now?: number): Promise<void> {
    const [burst, sustained] = this.rates;
    const row = await hitRateLimit(this.db, this.scope, key, burst, sustained, now);
    if (Date.now() - this.lastSweep > SWEEP_MS) {
      this.lastSweep = Date.now();
      sweepRateLimits(this.db).catch(() => {});
    }
    if (row.allowed) return;
    let retryAfterMs = 0;
    if (row.burst_count >= burst.limit) retryAfterMs = row.burst_start + burst.windowMs - row.last_ms;
    if (row.sustained_count >= sustained.limit) {
      retryAfterMs = Math.max(retryAfterMs, row.sustained_start + sustained.windowMs - row.last_ms);
    }
    throw ApiError.throttled(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  }
}
