import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { rowsOf } from './util.js';

/** Marks an asynchronous query's statement so that other processes can find and cancel it. */
export interface RunTag {
  /** Carried by the transaction (and so shown in pg_stat_activity) while the statement runs. */
  applicationName: string;
  /** Told the backend's pid before the statement starts; false stops the run there. */
  onBackend(pid: number): Promise<boolean>;
}

/** Thrown by runReadOnly when its tag's onBackend refused the run. */
export class RunRefused extends Error {}

/**
 * Runs a compiled Query API statement in a read-only transaction that PostgreSQL cancels after
 * `timeoutMs`, and returns each row's JSON array of values.
 */
export async function runReadOnly(db: Db, statement: SQL, timeoutMs: number, tag?: RunTag): Promise<unknown[][]> {
  const ms = Math.max(1, Math.floor(timeoutMs));
  return db.transaction(async (tx) => {
    // One round trip: read-only (a compiled query never writes; this makes sure), the timeout, and a
    // plan made for each query's own values (a prepared statement's generic plan cannot see the
    // project id or the LIMIT, and planned aggregations over a project twice as slow).
    if (!tag) {
      await tx.execute(
        sql`select set_config('transaction_read_only', 'on', true),
          set_config('statement_timeout', ${String(ms)}, true),
          set_config('plan_cache_mode', 'force_custom_plan', true)`,
      );
    } else {
      // The application name lasts as long as the transaction, so a cancel that matches it can only
      // reach this statement, not a later one of the pooled connection. The connection check makes
      // the backend notice within a second that the process which sent the statement is gone (killed),
      // rather than running on until the statement timeout with nobody to answer.
      const [row] = rowsOf<{ pid: number }>(
        await tx.execute(
          sql`select set_config('transaction_read_only', 'on', true),
            set_config('statement_timeout', ${String(ms)}, true),
            set_config('plan_cache_mode', 'force_custom_plan', true),
            set_config('application_name', ${tag.applicationName}, true),
            set_config('client_connection_check_interval', '1000', true),
            pg_backend_pid() as pid`,
        ),
      );
      if (!(await tag.onBackend(row!.pid))) throw new RunRefused();
    }
    const result = await tx.execute(statement);
    return rowsOf<{ r: unknown[] }>(result).map((row) => row.r);
  });
}
