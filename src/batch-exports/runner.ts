import type { Db } from '../db/client.js';
import { getBatchExportById } from '../db/queries/batch-exports.js';
import { claimRun, finishRun, heartbeatRun, settleBackfill } from '../db/queries/batch-export-runs.js';
import { insertLog } from '../db/queries/batch-export-lists.js';
import { HogQLError } from '../hogql/index.js';
import type { TenantNetwork } from '../net/index.js';
import { NonRetryableError, openDestination, type DestinationWriter } from './destinations/index.js';
import { recordSource } from './records.js';
import type { SecretBox } from '../secrets/index.js';

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
}

export type RunOutcome = 'skipped' | 'completed' | 'failed' | 'cancelled';

/** Thrown out of a job to make the job engine try the run again later. */
export class RetryRun extends Error {}

class Cancelled extends Error {}
class Stopped extends Error {}

const describe = (d: Date | null) => (d ? d.toISOString() : 'the beginning');

function errorText(err: unknown): string {
  const e = err as { name?: string; message?: string };
  return (e?.message || e?.name || String(err)).slice(0, 2000);
}

/**
 * Exports one run: claims it (so no other worker can), streams its records to the destination in
 * batches with a heartbeat after each, and records the outcome. Cancellation is noticed at the next
 * heartbeat. A stopping worker, or a failure that may pass, leaves the run `FailedRetryable` and
 * throws RetryRun; a failure that will not pass, or the last attempt's, makes it `Failed`.
 */
export async function executeRun(db: Db, a: RunAttempt): Promise<RunOutcome> {
  const run = await claimRun(db, a.runId, a.token, a.staleSeconds);
  if (!run) return 'skipped';
  const exp = await getBatchExportById(db, run.batch_export_id);
  const log = (level: string, message: string) =>
    exp
      ? insertLog(db, { project_id: exp.project_id, batch_export_id: exp.id, instance_id: run.id, level, message }).catch(() => {})
      : Promise.resolve();
  let writer: DestinationWriter | undefined;
  let completed = 0;
  let lost = false;
  const beat = async (extra: { records_total_count?: number } = {}) => {
    const ok = await heartbeatRun(db, run.id, a.token, { ...extra, records_completed: completed, bytes_exported: writer?.bytes ?? 0 });
    if (!ok) lost = true;
  };
  // Keeps the claim alive while one batch takes long at the destination.
  const timer = setInterval(() => void beat().catch(() => {}), Math.max(1000, (a.staleSeconds * 1000) / 3));
  try {
    if (!exp || exp.deleted) {
      await finishRun(db, run.id, a.token, { status: 'Cancelled', latest_error: 'The batch export was deleted.' });
      return 'cancelled';
    }
    const attempt = run.attempts > 1 ? ` (attempt ${run.attempts})` : '';
    await log('INFO', `Batch export run started: ${exp.model} from ${describe(run.data_interval_start)} to ${describe(run.data_interval_end)}${attempt}`);
    const source = recordSource(db, exp, run.data_interval_start, run.data_interval_end);
    const total = await source.count();
    await beat({ records_total_count: total });
    writer = await openDestination({ exp, run, source, network: a.network }, a.secrets);
    for await (const batch of source.batches(a.batchSize, writer.format)) {
      if (a.signal.aborted) throw new Stopped();
      await writer.write(batch);
      completed += batch.count;
      await beat();
      if (lost) throw new Cancelled();
    }
    if (a.signal.aborted) throw new Stopped();
    await writer.finish();
    const done = await finishRun(db, run.id, a.token, {
      status: 'Completed',
      latest_error: null,
      records_completed: completed,
      bytes_exported: writer.bytes,
    });
    if (!done) return 'cancelled';
    await log('INFO', `Batch export run finished: ${completed} records exported (${writer.bytes} bytes)`);
    return 'completed';
  } catch (err) {
    await writer?.abort();
    if (err instanceof Cancelled || lost) {
      await log('WARNING', 'Batch export run cancelled');
      return 'cancelled';
    }
    if (err instanceof Stopped) {
      const message = 'The worker stopped before the run finished; it will be retried.';
      await finishRun(db, run.id, a.token, { status: 'FailedRetryable', latest_error: message, records_completed: completed });
      await log('WARNING', message);
      throw new RetryRun(message);
    }
    const message = errorText(err);
    const permanent = err instanceof NonRetryableError || err instanceof HogQLError;
    if (!permanent && a.retryCount < a.retryLimit) {
      await finishRun(db, run.id, a.token, { status: 'FailedRetryable', latest_error: message, records_completed: completed });
      await log('WARNING', `Batch export run failed, will retry: ${message}`);
      throw new RetryRun(message);
    }
    await finishRun(db, run.id, a.token, { status: 'Failed', latest_error: message, records_completed: completed });
    await log('ERROR', `Batch export run failed: ${message}`);
    return 'failed';
  } finally {
    clearInterval(timer);
    if (run.backfill_id) await settleBackfill(db, run.backfill_id).catch(() => {});
  }
}
