import { sqlState } from '../core/sql-state.js';

/** in_failed_sql_transaction: a statement sent after one that failed in the same transaction. */
const AFTER_FAILURE = '25P02';

type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: Awaited<T[K]> };

/**
 * `Promise.all` for statements pipelined on one transaction. When one fails, the statements sent
 * after it fail with "current transaction is aborted", and whichever rejection settles first would
 * hide the cause (a deadlock a caller retries becomes a server error). This waits for all of them
 * and throws the failure that is not a consequence of another one.
 */
export async function allPipelined<T extends readonly unknown[] | []>(statements: T): Promise<Settled<T>> {
  const settled = await Promise.allSettled(statements as readonly unknown[]);
  const failures = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => s.reason);
  if (failures.length) throw failures.find((e) => sqlState(e) !== AFTER_FAILURE) ?? failures[0];
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as Settled<T>;
}
