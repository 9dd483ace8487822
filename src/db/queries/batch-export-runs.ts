import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { batch_export_backfills, batch_export_runs } from '../schema/index.js';
import type { RunRow } from './batch-exports.js';

export type BackfillRow = typeof batch_export_backfills.$inferSelect;

/** PostHog's BatchExportRun.Status. */
export const RUN_STATUSES = [
  'Cancelled',
  'Completed',
  'ContinuedAsNew',
  'Failed',
  'FailedRetryable',
  'FailedBilling',
  'Terminated',
  'TimedOut',
  'Running',
  'Starting',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** Runs in these states still have work ahead of them. */
export const PENDING: RunStatus[] = ['Starting', 'Running', 'FailedRetryable'];

export async function insertRuns(
  db: Db,
  exportId: string,
  intervals: { start: Date | null; end: Date }[],
  backfillId: string | null = null,
): Promise<RunRow[]> {
  if (!intervals.length) return [];
  const rows = intervals.map((i) => ({
    batch_export_id: exportId,
    backfill_id: backfillId,
    status: 'Starting',
    data_interval_start: i.start,
    data_interval_end: i.end,
  }));
  // Scheduled runs are unique per interval, so a second scheduler inserting the same ones gets nothing back.
  return db.insert(batch_export_runs).values(rows).onConflictDoNothing().returning();
}

export async function getRun(db: Db, exportId: string, runId: string): Promise<RunRow | undefined> {
  const [row] = await db
    .select()
    .from(batch_export_runs)
    .where(and(eq(batch_export_runs.batch_export_id, exportId), eq(batch_export_runs.id, runId)))
    .limit(1);
  return row;
}

export async function getRunById(db: Db, runId: string): Promise<RunRow | undefined> {
  const [row] = await db.select().from(batch_export_runs).where(eq(batch_export_runs.id, runId)).limit(1);
  return row;
}

/**
 * Takes a run for one worker: only a waiting run, or a running one whose holder stopped heartbeating
 * for `staleSeconds`, can be claimed, so two workers never export the same run at once.
 */
export async function claimRun(db: Db, runId: string, token: string, staleSeconds: number): Promise<RunRow | undefined> {
  const [row] = await db
    .update(batch_export_runs)
    .set({
      status: 'Running',
      claimed_by: token,
      heartbeat_at: sql`now()`,
      last_updated_at: sql`now()`,
      attempts: sql`${batch_export_runs.attempts} + 1`,
    })
    .where(
      and(
        eq(batch_export_runs.id, runId),
        sql`(${batch_export_runs.status} in ('Starting', 'FailedRetryable') or (${batch_export_runs.status} = 'Running' and ${batch_export_runs.heartbeat_at} < now() - make_interval(secs => ${staleSeconds})))`,
      ),
    )
    .returning();
  return row;
}

/** Records progress; answers false when the claim is lost (the run was cancelled or taken over). */
export async function heartbeatRun(
  db: Db,
  runId: string,
  token: string,
  progress: { records_completed?: number; bytes_exported?: number; records_total_count?: number } = {},
): Promise<boolean> {
  const rows = await db
    .update(batch_export_runs)
    .set({ ...progress, heartbeat_at: sql`now()`, last_updated_at: sql`now()` })
    .where(and(eq(batch_export_runs.id, runId), eq(batch_export_runs.claimed_by, token), eq(batch_export_runs.status, 'Running')))
    .returning({ id: batch_export_runs.id });
  return rows.length === 1;
}

export async function finishRun(
  db: Db,
  runId: string,
  token: string,
  values: {
    status: RunStatus;
    latest_error?: string | null;
    records_completed?: number;
    bytes_exported?: number;
    records_total_count?: number;
  },
): Promise<RunRow | undefined> {
  const terminal = values.status !== 'FailedRetryable';
  const [row] = await db
    .update(batch_export_runs)
    .set({
      ...values,
      claimed_by: null,
      last_updated_at: sql`now()`,
      ...(terminal ? { finished_at: sql`now()` } : {}),
    })
    .where(and(eq(batch_export_runs.id, runId), eq(batch_export_runs.claimed_by, token), eq(batch_export_runs.status, 'Running')))
    .returning();
  return row;
}

/** Runs that may need their job sent again: waiting too long, or held by a worker that went silent. */
export async function orphanedRuns(db: Db, staleSeconds: number, limit = 500): Promise<RunRow[]> {
  return db
    .select()
    .from(batch_export_runs)
    .where(
      sql`((${batch_export_runs.status} in ('Starting', 'FailedRetryable') and ${batch_export_runs.last_updated_at} < now() - make_interval(secs => ${staleSeconds}))
        or (${batch_export_runs.status} = 'Running' and ${batch_export_runs.heartbeat_at} < now() - make_interval(secs => ${staleSeconds})))`,
    )
    .limit(limit);
}

/** Cancels runs that have not finished; a worker holding one notices at its next heartbeat. */
export async function cancelRuns(db: Db, where: SQL): Promise<RunRow[]> {
  return db
    .update(batch_export_runs)
    .set({ status: 'Cancelled', finished_at: sql`now()`, last_updated_at: sql`now()`, claimed_by: null })
    .where(and(where, inArray(batch_export_runs.status, PENDING)))
    .returning();
}

export async function insertBackfill(
  db: Db,
  values: { project_id: number; batch_export_id: string; start_at: Date | null; end_at: Date | null; adjusted_start_at: Date | null },
): Promise<BackfillRow> {
  const [row] = await db
    .insert(batch_export_backfills)
    .values({ ...values, status: 'Running' })
    .returning();
  return row!;
}

export async function getBackfill(db: Db, exportId: string, id: string): Promise<BackfillRow | undefined> {
  const [row] = await db
    .select()
    .from(batch_export_backfills)
    .where(and(eq(batch_export_backfills.batch_export_id, exportId), eq(batch_export_backfills.id, id)))
    .limit(1);
  return row;
}

export async function setBackfillStatus(db: Db, id: string, status: string, from: string[] = ['Starting', 'Running']): Promise<BackfillRow | undefined> {
  const terminal = !['Starting', 'Running'].includes(status);
  const [row] = await db
    .update(batch_export_backfills)
    .set({ status, last_updated_at: sql`now()`, ...(terminal ? { finished_at: sql`now()` } : {}) })
    .where(and(eq(batch_export_backfills.id, id), inArray(batch_export_backfills.status, from)))
    .returning();
  return row;
}

/** Run counts of each backfill, by status. */
export async function backfillRunCounts(db: Db, ids: string[]): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>(ids.map((id) => [id, {}]));
  if (!ids.length) return out;
  const rows = await db
    .select({ backfill_id: batch_export_runs.backfill_id, status: batch_export_runs.status, n: sql<number>`count(*)::int` })
    .from(batch_export_runs)
    .where(inArray(batch_export_runs.backfill_id, ids))
    .groupBy(batch_export_runs.backfill_id, batch_export_runs.status);
  for (const r of rows) out.get(r.backfill_id!)![r.status] = Number(r.n);
  return out;
}

/** Closes a backfill once none of its runs has work ahead: Failed if one failed, else Completed. */
export async function settleBackfill(db: Db, id: string): Promise<void> {
  const counts = (await backfillRunCounts(db, [id])).get(id)!;
  if (PENDING.some((s) => counts[s])) return;
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const [sum] = await db
    .select({ n: sql<number>`coalesce(sum(${batch_export_runs.records_completed}), 0)::bigint` })
    .from(batch_export_runs)
    .where(eq(batch_export_runs.backfill_id, id));
  await db
    .update(batch_export_backfills)
    .set({ total_records_count: total ? Number(sum?.n ?? 0) : 0 })
    .where(eq(batch_export_backfills.id, id));
  await setBackfillStatus(db, id, counts.Failed ? 'Failed' : 'Completed');
}
