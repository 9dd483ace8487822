import type { BatchExportRow, RunRow } from '../queries.js';
import type { TenantNetwork } from '../../net/index.js';
import type { RecordBatch, RecordFormat, RecordSource } from '../records.js';

/** Writes one run's records. Nothing is visible at the destination as complete until `finish`. */
export interface DestinationWriter {
  /** The form it takes records in; `json` when unset. */
  readonly format?: RecordFormat;
  write(batch: RecordBatch): Promise<void>;
  finish(): Promise<void>;
  /** Undoes or abandons what `write` started; never throws. */
  abort(): Promise<void>;
  /** Bytes sent to the destination so far. */
  readonly bytes: number;
}

export interface DestinationContext {
  exp: BatchExportRow;
  run: RunRow;
  source: RecordSource;
  /** What the destination may connect to. */
  network: TenantNetwork;
  /**
   * The longest one call to the destination may take before the run fails (retryably); the connection is then
   * discarded.
   */
  deadlineMs?: number;
}

/** A failure that retrying will not fix (bad credentials, a refused request); the run fails at once. */
export class NonRetryableError extends Error {}
