import { bigint, boolean, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Throttle counters shared by every process on the database (src/http/rate-limit.ts): one row per
 * limiter and key, holding its two fixed windows (burst and sustained), each started by the first
 * request after the previous one ran out. Times are the database clock's milliseconds, so processes on
 * machines whose clocks differ count in the same windows. The table is UNLOGGED (migration 0026): a
 * counter is worth no WAL, and a crash that empties it only restarts the windows. Rows past
 * `expires_at` are deleted by the limiter from time to time.
 */
export const rate_limit_counters = pgTable(
  'rate_limit_counters',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    burst_start: bigint('burst_start', { mode: 'number' }).notNull(),
    burst_count: integer('burst_count').notNull(),
    sustained_start: bigint('sustained_start', { mode: 'number' }).notNull(),
    sustained_count: integer('sustained_count').notNull(),
    /** The last request's time, and whether it was let through. */
    last_ms: bigint('last_ms', { mode: 'number' }).notNull(),
    allowed: boolean('allowed').notNull(),
    expires_at: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] })],
);
