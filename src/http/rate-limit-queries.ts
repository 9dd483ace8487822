import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/queries/util.js';
import type { Rate } from './rate-limit.js';

export interface RateLimitRow {
  allowed: boolean;
  burst_start: number;
  burst_count: number;
  sustained_start: number;
  sustained_count: number;
  last_ms: number;
}

/**
 * One request for (`scope`, `key`), in one statement: a window that has run out starts again at this
 * request; the request is counted in both windows unless one of them is already full. ON CONFLICT DO
 * UPDATE evaluates its expressions on the row as locked, so concurrent requests from any number of
 * processes are counted one after another and never pass a limit together. Throttle keys are not
 * tenant data: a key id (or a share and an address) names the counter.
 */
export async function hitRateLimit(
  db: Db,
  scope: string,
  key: string,
  burst: Rate,
  sustained: Rate,
  now: number | undefined,
): Promise<RateLimitRow> {
  const clock = now === undefined ? sql`(extract(epoch from clock_timestamp()) * 1000)::bigint` : sql`${now}::bigint`;
  const longest = Math.max(burst.windowMs, sustained.windowMs);
  const b = sql`(excluded.last_ms - r.burst_start >= ${burst.windowMs})`;
  const s = sql`(excluded.last_ms - r.sustained_start >= ${sustained.windowMs})`;
  const bCount = sql`(case when ${b} then 0 else r.burst_count end)`;
  const sCount = sql`(case when ${s} then 0 else r.sustained_count end)`;
  const full = sql`(${bCount} >= ${burst.limit} or ${sCount} >= ${sustained.limit})`;
  const result = await db.execute(sql`
    insert into rate_limit_counters as r
      (scope, key, burst_start, burst_count, sustained_start, sustained_count, last_ms, allowed, expires_at)
    select ${scope}, ${key}, t.ms, 1, t.ms, 1, t.ms, true, to_timestamp((t.ms + ${longest}) / 1000.0)
    from (select ${clock} as ms) t
    on conflict (scope, key) do update set
      burst_start = case when ${b} then excluded.last_ms else r.burst_start end,
      burst_count = ${bCount} + case when ${full} then 0 else 1 end,
      sustained_start = case when ${s} then excluded.last_ms else r.sustained_start end,
      sustained_count = ${sCount} + case when ${full} then 0 else 1 end,
      last_ms = excluded.last_ms,
      allowed = not ${full},
      expires_at = to_timestamp(greatest(
        case when ${b} then excluded.last_ms else r.burst_start end + ${burst.windowMs},
        case when ${s} then excluded.last_ms else r.sustained_start end + ${sustained.windowMs}) / 1000.0)
    returning allowed, burst_start::float8 as burst_start, burst_count, sustained_start::float8 as sustained_start,
      sustained_count, last_ms::float8 as last_ms`);
  const [row] = rowsOf<RateLimitRow>(result);
  if (!row) throw new Error('the throttle counter answered no row');
  return row;
}

/** Deletes counters whose windows have all run out (a later request starts them again). */
export async function sweepRateLimits(db: Db): Promise<void> {
  await db.execute(sql`delete from rate_limit_counters where expires_at < now()`);
}
