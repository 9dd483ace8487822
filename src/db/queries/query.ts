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
    await tx.execute(sql`set transaction read only`);
    // SET takes no bound parameters; `ms` is an integer this process computed.
    await tx.execute(sql.raw(`set local statement_timeout = ${ms}`));
    const result = await tx.execute(statement);
    return rowsOf<{ r: unknown[] }>(result).map((row) => row.r);
  });
}
