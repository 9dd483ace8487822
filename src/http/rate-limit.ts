import { ApiError } from '../core/errors.js';

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

/**
 * PostHog's personal-API-key throttles: a burst and a sustained limit per key, each a fixed window.
 * Counters live in this process, so N server processes allow up to N times the limits; that keeps
 * throttling free of a database round trip per request.
 */
export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(private rates: Rate[]) {}

  /** Counts one request for `key`, or throws 429 with Retry-After when a window is full. */
  hit(key: string, now = Date.now()): void {
    let retryAfterMs = 0;
    const entries = this.rates.map((rate, i) => {
      const id = `${i}:${key}`;
      let w = this.windows.get(id);
      if (!w || now - w.start >= rate.windowMs) {
        w = { start: now, count: 0 };
        this.windows.set(id, w);
      }
      if (w.count >= rate.limit) retryAfterMs = Math.max(retryAfterMs, w.start + rate.windowMs - now);
      return w;
    });
    if (retryAfterMs > 0) throw ApiError.throttled(Math.ceil(retryAfterMs / 1000));
    for (const w of entries) w.count++;
    if (this.windows.size > 100_000) this.sweep(now);
  }

  private sweep(now: number): void {
    const longest = Math.max(...this.rates.map((r) => r.windowMs));
    for (const [id, w] of this.windows) if (now - w.start >= longest) this.windows.delete(id);
  }
}
