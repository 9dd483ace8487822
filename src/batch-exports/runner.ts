import type { Db } from '../db/client.js';
import { caughtUpReader } from '../db/replica.js';
import { getBatchExportById } from './queries.js';
import { settleBackfill, unscopedClaimRun, unscopedFinishRun, unscopedHeartbeatRun } from './run-queries.js';
import { insertLog } from './list-queries.js';
import { QueryError } from '../hogql/index.js';
import type { TenantNetwork } from '../net/index.js';
import type { SecretBox } from '../secrets/index.js';
import { describeError, unlessAborted, withDeadline } from './deadline.js';
import { isConnectionLost } from '../db/connection-lost.js';
import { NonRetryableError, openDestination, type DestinationWriter } from './destinations/index.js';
import { exportModel, recordSource, type RecordBatch } from './records.js';

export interface RunAttempt {
  runId: string;
  /** Identifies this attempt's claim on the run. */
  token: string;
  retryCount: number;
  retryLimit: number;
  /** Aborted when the worker stops: the run is handed back, retryable. */
  signal: AbortSignal;
  batchSize: number;
  staleSeconds: number;
  /** Decrypts the destination's secrets. */
  secrets: SecretBox;
  /** What the run's destination may connect to. */
  network: TenantNetwork;
  /**
   * The longest one reading or writing step may take (a batch's statements at the destination, the
   * wait for the source's next batch, counting the records); bookkeeping calls (claim, heartbeat,
   * outcome, log lines) get a third of `staleSeconds`.
   */
  stepSeconds?: number;
  /**
   * The read replica the run's records are read from when it has replayed every write made before the
   * run started (else they are read from `db`, the primary); unset: `db`.
   */
  read?: Db;
}

/** How long a run waits for the replica to replay the writes made before it started. */
const REPLICA_WAIT_MS = 5_000;

export type RunOutcome = 'skipped' | 'completed' | 'failed' | 'cancelled';

/** Thrown out of a job to make the job engine try the run again later. */
export class RetryRun extends Error {}

class Cancelled extends Error {}
class Stopped extends Error {}

const describe = (d: Date | null) => (d ? d.toISOString() : 'the beginning');

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `work`, tried again every 250 ms for up to `ms` while the database cannot be reached. */
async function whileUnreachable<T>(work: () => Promise<T>, ms: number, signal: AbortSignal): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await work();
    } catch (err) {
      if (!isConnectionLost(err) || Date.now() > until || signal.aborted) throw err;
      await pause(250);
    }
  }
}

/**
 * Exports one run: claims it (so no other worker can), streams its records to the destination in
 * batches with a heartbeat after each, and records the outcome. Cancellation is noticed at the next
 * heartbeat. A stopping worker, or a failure that may pass, leaves the run `FailedRetryable` and
 * throws RetryRun; a failure that will not pass, or the last attempt's, makes it `Failed`.
 */
export async function executeRun(db: Db, a: RunAttempt): Promise<RunOutcome> {
  // Every call has a deadline, so an attempt ends (and its heartbeat with it) even when a connection
  // hangs; the run is then taken up again by the job engine's retry on any worker.
  const callMs = Math.max(1000, (a.staleSeconds * 1000) / 3);
  const stepMs = (a.stepSeconds ?? Math.max(60, a.staleSeconds * 5)) * 1000;
  const call = <T>(work: Promise<T>, what: string) => withDeadline(work, callMs, `The database (${what})`);
  // A stopping worker does not wait for a slow step: the run is handed back at once.
  const unlessStopped = <T>(work: Promise<T>) => unlessAborted(work, a.signal, () => new Stopped());
  const step = <T>(work: Promise<T>, what: string) => unlessStopped(withDeadline(work, stepMs, what));
  // The first calls are sent again while the database is restarting: failing the job then would
  // leave it to the job engine, which cannot record the failure either, and the run would wait for
  // the engine's next supervision pass. A claim whose first try committed is found by its token.
  const meanwhile = <T>(work: () => Promise<T>) => whileUnreachable(work, a.staleSeconds * 1000, a.signal);
  const run = await meanwhile(() => call(unscopedClaimRun(db, a.runId, a.token, a.staleSeconds), 'claiming the run'));
  if (!run) return 'skipped';
  const exp = await meanwhile(() => call(getBatchExportById(db, run.batch_export_id), 'reading the export'));
  const log = (level: string, message: string) =>
    exp
      ? call(
          insertLog(db, { project_id: exp.project_id, batch_export_id: exp.id, instance_id: run.id, level, message }),
          'logging',
        ).catch(() => {})
      : Promise.resolve();
  /**
   * The outcome of a failed attempt, tried again for a while: it usually fails because the database
   * is restarting. If it cannot be written the run keeps its stale heartbeat and is retried all the same.
   */
  const settle = async (values: Parameters<typeof unscopedFinishRun>[3]) => {
    const until = Date.now() + a.staleSeconds * 500;
    for (;;) {
      try {
        return await call(unscopedFinishRun(db, run.id, a.token, values), 'recording the outcome');
      } catch {
        if (Date.now() > until) return undefined;
        await pause(250);
      }
    }
  };
  let writer: DestinationWriter | undefined;
  let batches: AsyncGenerator<RecordBatch> | undefined;
  let completed = 0;
  let lost = false;
  const beat = async (extra: { records_total_count?: number } = {}) => {
    const ok = await call(
      unscopedHeartbeatRun(db, run.id, a.token, {
        ...extra,
        records_completed: completed,
        bytes_exported: writer?.bytes ?? 0,
      }),
      'heartbeat',
    );
    if (!ok) lost = true;
  };
  // Keeps the claim alive while one batch takes long at the destination.
  const timer = setInterval(() => void beat().catch(() => {}), callMs);
  try {
    if (!exp || exp.deleted) {
      await call(
        unscopedFinishRun(db, run.id, a.token, { status: 'Cancelled', latest_error: 'The batch export was deleted.' }),
        'recording the outcome',
      );
      return 'cancelled';
    }
    const attempt = run.attempts > 1 ? ` (attempt ${run.attempts})` : '';
    await log(
      'INFO',
      `Batch export run started: ${exportModel(exp)} from ${describe(run.data_interval_start)} to ` +
        `${describe(run.data_interval_end)}${attempt}`,
    );
    // An interval's events are all committed before its run starts, so a replica that has replayed up to
    // now holds them all; one further behind is passed over for this run.
    const reader = a.read
      ? await step(caughtUpReader(db, a.read, REPLICA_WAIT_MS), 'Waiting for the read replica')
      : { db, replica: false };
    if (a.read && !reader.replica) {
      await log('INFO', 'The read replica is behind the primary, so this run reads from the primary.');
    }
    const source = await recordSource(reader.db, exp, run.data_interval_start, run.data_interval_end, stepMs);
    const total = await step(source.count(), 'Counting the records');
    await beat({ records_total_count: total });
    writer = await openDestination({ exp, run, source, network: a.network, deadlineMs: stepMs }, a.secrets);
    // Iterated by hand rather than with for-await, which on a failure would first wait for the
    // source to close (a dead connection's cleanup) before the attempt could end.
    batches = source.batches(a.batchSize, writer.format);
    for (;;) {
      const next = await unlessStopped(batches.next());
      if (next.done) break;
      if (a.signal.aborted) throw new Stopped();
      await step(writer.write(next.value), 'The destination');
      completed += next.value.count;
      await beat();
      if (lost) throw new Cancelled();
    }
    batches = undefined;
    if (a.signal.aborted) throw new Stopped();
    await step(writer.finish(), 'The destination');
    const done = await call(
      unscopedFinishRun(db, run.id, a.token, {
        status: 'Completed',
        latest_error: null,
        records_completed: completed,
        bytes_exported: writer.bytes,
      }),
      'recording the outcome',
    );
    if (!done) return 'cancelled';
    await log('INFO', `Batch export run finished: ${completed} records exported (${writer.bytes} bytes)`);
    return 'completed';
  } catch (err) {
    // The attempt is over: stop claiming the run before anything else, so a retry may take it.
    clearInterval(timer);
    await Promise.all([
      withDeadline(writer?.abort() ?? Promise.resolve(), callMs, 'abort').catch(() => {}),
      withDeadline<unknown>(batches?.return(undefined) ?? Promise.resolve(), callMs, 'closing the source').catch(
        () => {},
      ),
    ]);
    if (err instanceof Cancelled || lost) {
      await log('WARNING', 'Batch export run cancelled');
      return 'cancelled';
    }
    if (err instanceof Stopped) {
      const message = 'The worker stopped before the run finished; it will be retried.';
      await settle({ status: 'FailedRetryable', latest_error: message, records_completed: completed });
      await log('WARNING', message);
      throw new RetryRun(message);
    }
    const message = describeError(err);
    const permanent = err instanceof NonRetryableError || err instanceof QueryError;
    if (!permanent && a.retryCount < a.retryLimit) {
      await settle({ status: 'FailedRetryable', latest_error: message, records_completed: completed });
      await log('WARNING', `Batch export run failed, will retry: ${message}`);
      throw new RetryRun(message);
    }
    await settle({ status: 'Failed', latest_error: message, records_completed: completed });
    await log('ERROR', `Batch export run failed: ${message}`);
    return 'failed';
  } finally {
    clearInterval(timer);
    if (run.backfill_id && exp) {
      await call(settleBackfill(db, { project_id: exp.project_id }, run.backfill_id), 'settling the backfill').catch(
        () => {},
      );
    }
  }
}
