import type { Db } from '../db/client.js';
import { afterCommit, transaction } from '../db/after-commit.js';
import {
  schedulableExports,
  unscopedAdvanceSchedule,
  updateBatchExport,
  type BatchExportRow,
  type ExportScope,
  type RunRow,
} from './queries.js';
import {
  cancelBackfills,
  cancelRuns,
  insertBackfill,
  insertRuns,
  orphanedRuns,
  setBackfillStatus,
  settleBackfill,
  unscopedInsertScheduledRuns,
  type BackfillRow,
} from './run-queries.js';
import type { JobEngine } from './engine.js';
import { ceilToGrid, dueIntervals, floorToGrid, intervalMs, intervalsBetween } from './intervals.js';
import { earliestData } from './records.js';
import { ApiError } from '../core/errors.js';

const MAX_BACKFILL_RUNS = 100_000;

// Python's datetime.fromisoformat, which PostHog uses: a date, or a date and time with an optional offset.
const ISO =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2}(?::\d{2}(?:[.,]\d{1,6})?)?)?(Z|[+-]\d{2}(?::?\d{2}(?::\d{2})?)?)?)?$/;

function parseBound(input: unknown): Date | null {
  if (input === undefined || input === null) return null;
  const text = String(input);
  const m = typeof input === 'string' ? ISO.exec(text) : null;
  const at = m ? new Date(text.length === 10 ? `${text}T00:00:00` : text.replace(' ', 'T')) : null;
  if (!m || !at || Number.isNaN(at.getTime()))
    throw ApiError.validation(null, `Input ${text} is not a valid ISO formatted datetime.`);
  if (!m[1]) throw ApiError.validation(null, `Input ${text} is naive.`);
  return at;
}

function formatUtc(d: Date): string {
  return d.toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * Creates a backfill with one run per grid interval of [start, end) and queues them (validation
 * order and messages as PostHog's `create_backfill`). Returns its id.
 */
export async function createBackfill(
  db: Db,
  scope: ExportScope,
  engine: JobEngine,
  exp: BatchExportRow,
  startInput: unknown,
  endInput: unknown,
  now = new Date(),
): Promise<string> {
  const start = parseBound(startInput);
  const end = parseBound(endInput);
  let adjusted: Date | null = null;
  if (start || end) {
    const earliest = await earliestData(db, exp);
    if (!earliest) throw ApiError.validation(null, 'There is no data to backfill for this model.');
    const earliestStart = floorToGrid(earliest, exp.interval);
    if (end && end < earliestStart) {
      throw ApiError.validation(
        null,
        `The provided backfill date range contains no data. The earliest possible backfill start date is ` +
          `${formatUtc(earliestStart)}`,
      );
    }
    if (start && start < earliestStart) adjusted = earliestStart;
  }
  if (start && end && start >= end)
    throw ApiError.validation(null, "The initial backfill datetime 'start_at' happens after 'end_at'");
  if (end && end.getTime() > now.getTime() + intervalMs(exp.interval)) {
    throw ApiError.validation(null, `The provided 'end_at' (${end.toISOString()}) is in the future`);
  }
  const from = adjusted ?? start;
  const to = end ? ceilToGrid(end, exp.interval) : floorToGrid(now, exp.interval);
  const intervals = from ? intervalsBetween(from, to, exp.interval, MAX_BACKFILL_RUNS + 1) : [{ start: null, end: to }];
  if (intervals.length > MAX_BACKFILL_RUNS) {
    throw ApiError.validation(null, `A backfill may have at most ${MAX_BACKFILL_RUNS} runs; choose a shorter range.`);
  }
  return startBackfill(
    db,
    scope,
    engine,
    exp,
    { start_at: start, end_at: end, adjusted_start_at: adjusted },
    intervals,
  );
}

async function startBackfill(
  db: Db,
  scope: ExportScope,
  engine: JobEngine,
  exp: BatchExportRow,
  bounds: { start_at: Date | null; end_at: Date | null; adjusted_start_at: Date | null },
  intervals: { start: Date | null; end: Date }[],
): Promise<string> {
  // The runs are queued once they are committed: a worker never picks up a run it cannot read yet, and a
  // rolled-back backfill queues nothing.
  return transaction(db, async (tx) => {
    const backfill = await insertBackfill(tx, scope, { batch_export_id: exp.id, ...bounds });
    if (!backfill) throw ApiError.notFound();
    const runs: RunRow[] = [];
    for (let i = 0; i < intervals.length; i += 1000) {
      runs.push(...(await insertRuns(tx, scope, exp.id, intervals.slice(i, i + 1000), backfill.id)));
    }
    if (!runs.length) await setBackfillStatus(tx, scope, backfill.id, 'Completed');
    afterCommit(tx, () => engine.enqueueRuns(runs));
    return backfill.id;
  });
}

/** A one-interval backfill that exports a run's interval again (PostHog's `runs/{id}/retry`). */
export async function retryRun(
  db: Db,
  scope: ExportScope,
  engine: JobEngine,
  exp: BatchExportRow,
  run: RunRow,
): Promise<string> {
  return startBackfill(
    db,
    scope,
    engine,
    exp,
    { start_at: run.data_interval_start, end_at: run.data_interval_end, adjusted_start_at: null },
    [{ start: run.data_interval_start, end: run.data_interval_end }],
  );
}

/** Idempotent: pausing a paused export changes nothing, not even `last_updated_at`. */
export async function pauseExport(db: Db, scope: ExportScope, exp: BatchExportRow): Promise<void> {
  await updateBatchExport(db, scope, exp.id, { paused: true, last_paused_at: new Date() }, { ifPaused: false });
}

/**
 * Resumes the schedule from now on (the paused gap is skipped, as PostHog's schedule skips missed
 * actions) and, with `backfill`, backfills from `last_paused_at` up to the current interval.
 */
export async function unpauseExport(
  db: Db,
  scope: ExportScope,
  engine: JobEngine,
  exp: BatchExportRow,
  backfill: boolean,
  now = new Date(),
): Promise<void> {
  const pausedAt = exp.last_paused_at;
  // One transaction: resumed with its backfill, or neither.
  await transaction(db, async (tx) => {
    const row = await updateBatchExport(tx, scope, exp.id, { paused: false, schedule_from: now }, { ifPaused: true });
    if (!row || !backfill || !pausedAt) return;
    const to = floorToGrid(now, exp.interval);
    const intervals = intervalsBetween(pausedAt, to, exp.interval, MAX_BACKFILL_RUNS);
    if (intervals.length) {
      await startBackfill(
        tx,
        scope,
        engine,
        exp,
        { start_at: pausedAt, end_at: to, adjusted_start_at: null },
        intervals,
      );
    }
  });
}

/** Marks the export deleted and cancels whatever of it has not finished. */
export async function deleteExport(db: Db, scope: ExportScope, exp: BatchExportRow): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (!(await updateBatchExport(tx, scope, exp.id, { deleted: true }))) return false;
    await cancelRuns(tx, scope, { exportId: exp.id });
    await cancelBackfills(tx, scope, exp.id);
    return true;
  });
}

/**
 * Cancels a starting or running run; one transaction, so a failure leaves neither it cancelled nor its backfill
 * settled.
 */
export async function cancelRun(db: Db, scope: ExportScope, run: RunRow): Promise<void> {
  if (run.status !== 'Running' && run.status !== 'Starting') {
    throw ApiError.validation(null, `Cannot cancel a run that is in '${run.status}' status`);
  }
  await db.transaction(async (tx) => {
    await cancelRuns(tx, scope, { exportId: run.batch_export_id, runId: run.id });
    if (run.backfill_id) await settleBackfill(tx, scope, run.backfill_id);
  });
}

/** Cancels a starting or running backfill and the runs of it that have not finished. */
export async function cancelBackfill(db: Db, scope: ExportScope, backfill: BackfillRow): Promise<void> {
  if (backfill.status !== 'Running' && backfill.status !== 'Starting') {
    throw ApiError.validation(null, `Cannot cancel a backfill that is in '${backfill.status}' status`);
  }
  await db.transaction(async (tx) => {
    await setBackfillStatus(tx, scope, backfill.id, 'Cancelled');
    await cancelRuns(tx, scope, { exportId: backfill.batch_export_id, backfillId: backfill.id });
  });
}

/**
 * Creates the runs every unpaused export owes at `now` and queues them. Safe to call from any
 * number of workers at once: runs are unique per export and interval.
 */
export async function scheduleDueRuns(db: Db, engine: JobEngine, now = new Date()): Promise<RunRow[]> {
  const created: RunRow[] = [];
  for (const exp of await schedulableExports(db, now)) {
    const due = dueIntervals({
      from: exp.schedule_from,
      now,
      interval: exp.interval,
      start_at: exp.start_at,
      end_at: exp.end_at,
    });
    if (!due.length) continue;
    const runs = await transaction(db, async (tx) => {
      const runs = await unscopedInsertScheduledRuns(tx, exp.id, due);
      await unscopedAdvanceSchedule(tx, exp.id, due[due.length - 1]!.end);
      afterCommit(tx, () => engine.enqueueRuns(runs));
      return runs;
    });
    created.push(...runs);
  }
  return created;
}

/** Queues again the runs whose job was lost (a crash between creating a run and queueing it, or a dead worker). */
export async function requeueOrphans(db: Db, engine: JobEngine, staleSeconds: number): Promise<number> {
  const runs = await orphanedRuns(db, staleSeconds);
  await engine.enqueueRuns(runs);
  return runs.length;
}
