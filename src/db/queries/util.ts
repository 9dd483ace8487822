import { getTableColumns, sql, type SQL } from 'drizzle-orm';
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

/**
 * A timestamp as text in the form the contract uses and `Date#toISOString` writes (UTC, milliseconds, `Z`),
 * so a read that only shows it makes no Date. Both truncate PostgreSQL's microseconds to milliseconds.
 */
export function isoText(column: PgColumn | SQL): SQL<string | null> {
  return sql<string | null>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** The rows of a `db.execute` answer (postgres.js answers an array of rows), typed. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  return result as T[];
}

/**
 * Rows of `table` that arrive inside a JSON value (`to_json(t)`, `json_agg(t)`) rather than as columns:
 * keyed by column name, with timestamps as text. The mapper gives them the shape and types of a
 * `select()` row, so one statement can carry a row's related rows and the serializers stay the same.
 */
export function jsonRows<T extends PgTable>(table: T): (json: Record<string, unknown>) => T['$inferSelect'] {
  const columns = Object.entries(getTableColumns(table)).map(([key, col]) => ({
    key,
    name: col.name,
    date: col.dataType === 'date',
  }));
  return (json) => {
    const row: Record<string, unknown> = {};
    for (const c of columns) {
      const v = json[c.name] ?? null;
      row[c.key] = c.date && v !== null ? new Date(v as string) : v;
    }
    return row as T['$inferSelect'];
  };
}
