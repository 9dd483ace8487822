import { sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from '../client.js';

/** `count(*)` over a table and condition, as a number. */
export async function countWhere(db: Db, table: PgTable, where: SQL | undefined): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(table).where(where);
  return row?.n ?? 0;
}

/**
 * `column = any($1)`: one array parameter whatever the list's length, so the statement text (and
 * its prepared plan) is the same for every list. `values` is an array or a placeholder.
 */
export function anyOf(column: PgColumn, values: unknown): SQL {
  return sql`${column} = any(${Array.isArray(values) ? sql.param(values) : values})`;
}

/** The rows of a `db.execute` answer (postgres.js answers an array of rows), typed. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  return result as T[];
}
