import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { rowsOf } from './util.js';

/**
 * Runs a compiled Query API statement in a read-only transaction that PostgreSQL cancels after
 * `timeoutMs`, and returns each row's JSON array of values.
 */
export async function runReadOnly(db: Db, statement: SQL, timeoutMs: number): Promise<unknown[][]> {
  const ms = Math.max(1, Math.floor(timeoutMs));
  return db.transaction(async (tx) => {
    // One round trip: read-only (a compiled query never writes; this makes sure), the timeout, and a
    // plan made for each query's own values (a prepared statement's generic plan cannot see the
    // project id or the LIMIT, and planned aggregations over a project twice as slow).
    await tx.execute(
      sql`select set_config('transaction_read_only', 'on', true), set_config('statement_timeout', ${String(ms)}, true), set_config('plan_cache_mode', 'force_custom_plan', true)`,
    );
    const result = await tx.execute(statement);
    return rowsOf<{ r: unknown[] }>(result).map((row) => row.r);
  });
}
