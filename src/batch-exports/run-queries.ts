import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { batch_export_backfills, batch_export_runs, batch_exports } from '../db/schema/index.js';
import { scopeCondition, scopedExportIds, type ExportScope, type RunRow } from './queries.js';

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

/** Creates runs of an export of the scope; none when the export is not the scope's. */
export async function insertRuns(
  db: Db,
  scope: ExportScope,
  exportId: string,
  intervals: { start: Date | null; end: Date }[],
  backfillId: string | null = null,
): Promise<RunRow[]> {
  return (await scopedExport(db, scope, exportId)) ? writeRuns(db, exportId, intervals, backfillId) : [];
}

/** An insert has no where clause to filter by: the export's scope is checked first, in the caller's transaction. */
async function scopedExport(db: Db, scope: ExportScope, exportId: string): Promise<{ project_id: number } | undefined> {
  const [row] = await db
    .select({ project_id: batch_exports.project_id })
    .from(batch_exports)
    .where(and(eq(batch_exports.id, exportId), scopeCondition(scope)))
    .limit(1);
  return row;
}

/** The runs the scheduler owes. Unscoped: it serves every tenant, and ids come from `schedulableExports`. */
export async function unscopedInsertScheduledRuns(
  db: Db,
  exportId: string,
  intervals: { start: Date | null; end: Date }[],
): Promise<RunRow[]> {
  return writeRuns(db, exportId, intervals, null);
}

async function writeRuns(
  db: Db,
  exportId: string,
  intervals: { start: Date | null; end: Date }[],
  backfillId: string | null,
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

// Unscoped, the run-claim writes below: the worker serves every tenant, and run ids come from our own
// job queue, never from a request. Once claimed, a run is written only by the holder of its claim token.

/**
 * Takes a run for one worker: only a waiting run, or a running one whose holder stopped heartbeating
 * for `staleSeconds`, can be claimed, so two workers never export the same run at once. A run this
 * `token` already holds (a claim sent again because its answer was lost) is answered as it is.
 */
export async function unscopedClaimRun(
  db: Db,
  runId: string,
  token: string,
  staleSeconds: number,
): Promise<RunRow | undefined> {
  const runs = batch_export_runs;
  const stale = sql`now() - make_interval(secs => ${staleSeconds})`;
  const waiting = sql`${runs.status} in ('Starting', 'FailedRetryable')`;
  const [row] = await db
    .update(batch_export_runs)
    .set({
      status: 'Running',
      claimed_by: token,
      heartbeat_at: sql`now()`,
      last_updated_at: sql`now()`,
      attempts: sql`${runs.attempts} + (${runs.claimed_by} is distinct from ${token})::int`,
    })
    .where(
      and(
        eq(batch_export_runs.id, runId),
        sql`(${waiting} or (${runs.status} = 'Running'
          and (${runs.heartbeat_at} < ${stale} or ${runs.claimed_by} = ${token})))`,
      ),
    )
    .returning();
  return row;
}

/** Records progress; answers false when the claim is lost (the run was cancelled or taken over). */
export async function unscopedHeartbeatRun(
  db: Db,
  runId: string,
  token: string,
  progress: { records_completed?: number; bytes_exported?: number; records_total_count?: number } = {},
): Promise<boolean> {
  const rows = await db
    .update(batch_export_runs)
    .set({ ...progress, heartbeat_at: sql`now()`, last_updated_at: sql`now()` })
    .where(
      and(
        eq(batch_export_runs.id, runId),
        eq(batch_export_runs.claimed_by, token),
        eq(batch_export_runs.status, 'Running'),
      ),
    )
    .returning({ id: batch_export_runs.id });
  return rows.length === 1;
}

export async function unscopedFinishRun(
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
    .where(
      and(
        eq(batch_export_runs.id, runId),
        eq(batch_export_runs.claimed_by, token),
        eq(batch_export_runs.status, 'Running'),
      ),
    )
    .returning();
  return row;
}

/** Runs that may need their job sent again: waiting too long, or held by a worker that went silent. */
export async function orphanedRuns(db: Db, staleSeconds: number, limit = 500): Promise<RunRow[]> {
  const runs = batch_export_runs;
  const stale = sql`now() - make_interval(secs => ${staleSeconds})`;
  return db
    .select()
    .from(batch_export_runs)
    .where(
      sql`((${runs.status} in ('Starting', 'FailedRetryable') and ${runs.last_updated_at} < ${stale})
        or (${runs.status} = 'Running' and ${runs.heartbeat_at} < ${stale}))`,
    )
    .limit(limit);
}

/** Which runs of one export to cancel: all of them, one run, or one backfill's. */
export type RunTarget = { exportId: string; runId?: string; backfillId?: string };

/** Cancels the scope's runs that have not finished; a worker holding one notices at its next heartbeat. */
export async function cancelRuns(db: Db, scope: ExportScope, target: RunTarget): Promise<RunRow[]> {
  const r = batch_export_runs;
  return db
    .update(r)
    .set({ status: 'Cancelled', finished_at: sql`now()`, last_updated_at: sql`now()`, claimed_by: null })
    .where(
      and(
        eq(r.batch_export_id, target.exportId),
        inArray(r.batch_export_id, scopedExportIds(scope)),
        target.runId !== undefined ? eq(r.id, target.runId) : undefined,
        target.backfillId !== undefined ? eq(r.backfill_id, target.backfillId) : undefined,
        inArray(r.status, PENDING),
      ),
    )
    .returning();
}

/**
 * Creates a backfill of an export of the scope, in the export's project; undefined when the export is not the scope's.
 */
export async function insertBackfill(
  db: Db,
  scope: ExportScope,
  values: { batch_export_id: string; start_at: Date | null; end_at: Date | null; adjusted_start_at: Date | null },
): Promise<BackfillRow | undefined> {
  const exp = await scopedExport(db, scope, values.batch_export_id);
  if (!exp) return undefined;
  const [row] = await db
    .insert(batch_export_backfills)
    .values({ ...values, project_id: exp.project_id, status: 'Running' })
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

export async function setBackfillStatus(
  db: Db,
  scope: ExportScope,
  id: string,
  status: string,
  from: string[] = ['Starting', 'Running'],
): Promise<BackfillRow | undefined> {
  const b = batch_export_backfills;
  const terminal = !['Starting', 'Running'].includes(status);
  const [row] = await db
    .update(b)
    .set({ status, last_updated_at: sql`now()`, ...(terminal ? { finished_at: sql`now()` } : {}) })
    .where(and(eq(b.id, id), scopeCondition(scope, b.project_id), inArray(b.status, from)))
    .returning();
  return row;
}

/** Cancels an export's backfills that have not finished (the export is being deleted). */
export async function cancelBackfills(db: Db, scope: ExportScope, exportId: string): Promise<void> {
  const b = batch_export_backfills;
  await db
    .update(b)
    .set({ status: 'Cancelled', finished_at: sql`now()`, last_updated_at: sql`now()` })
    .where(
      and(
        eq(b.batch_export_id, exportId),
        scopeCondition(scope, b.project_id),
        inArray(b.status, ['Starting', 'Running']),
      ),
    );
}

/** Run counts of each backfill, by status. */
export async function backfillRunCounts(db: Db, ids: string[]): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>(ids.map((id) => [id, {}]));
  if (!ids.length) return out;
  const rows = await db
    .select({
      backfill_id: batch_export_runs.backfill_id,
      status: batch_export_runs.status,
      n: sql<number>`count(*)::int`,
    })
    .from(batch_export_runs)
    .where(inArray(batch_export_runs.backfill_id, ids))
    .groupBy(batch_export_runs.backfill_id, batch_export_runs.status);
  for (const r of rows) out.get(r.backfill_id!)![r.status] = Number(r.n);
  return out;
}

/** Closes a backfill once none of its runs has work ahead: Failed if one failed, else Completed. */
export async function settleBackfill(db: Db, scope: ExportScope, id: string): Promise<void> {
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
    .where(and(eq(batch_export_backfills.id, id), scopeCondition(scope, batch_export_backfills.project_id)));
  await setBackfillStatus(db, scope, id, counts.Failed ? 'Failed' : 'Completed');
}
