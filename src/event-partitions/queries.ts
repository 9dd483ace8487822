import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/queries/util.js';

// `events` is partitioned by UTC month of `timestamp` (drizzle/0026). The database functions called here
// make the partitions and drop them; each call is one transaction, taken under one advisory lock so that
// processes doing the same at once take turns, and each waits at most 5 s for a table lock.

/** What retention removed: partitions dropped, events deleted from the default partition, uuids forgotten. */
export interface RetentionResult {
  dropped: number;
  deleted: number;
  forgotten: number;
}

/**
 * The partitions of last month to two months ahead, and of the months (of the last ten years) that the
 * default partition holds events of, which are moved into them; never of a month that ends before
 * `keepFrom`. Returns how many were made.
 */
export async function ensurePartitions(db: Db, now: Date, keepFrom: Date | undefined): Promise<number> {
  const keep = keepFrom?.toISOString() ?? null;
  const rows = await db.execute(
    sql`select events_ensure_partitions(${now.toISOString()}::timestamptz, ${keep}::timestamptz) as n`,
  );
  return Number(rowsOf<{ n: number }>(rows)[0]?.n ?? 0);
}

/** Drops every month that ends at or before `cutoff`, the default partition's events before it, and their uuids. */
export async function dropBefore(db: Db, cutoff: Date): Promise<RetentionResult> {
  const rows = await db.execute(
    sql`select dropped, deleted::text, forgotten::text from events_drop_before(${cutoff.toISOString()}::timestamptz)`,
  );
  const [r] = rowsOf<{ dropped: number; deleted: string; forgotten: string }>(rows);
  return { dropped: Number(r?.dropped ?? 0), deleted: Number(r?.deleted ?? 0), forgotten: Number(r?.forgotten ?? 0) };
}

/** The partitions of `events` by name, with their bounds written in UTC (for operators and tests). */
export async function listPartitions(db: Db): Promise<{ name: string; bound: string }[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local timezone = 'UTC'`);
    const rows = await tx.execute(sql`select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'public.events'::regclass order by c.relname`);
    return rowsOf<{ name: string; bound: string }>(rows);
  });
}
