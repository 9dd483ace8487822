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
 * A timestamptz as PostgreSQL writes it (`2024-01-02 03:04:05.123456+00` as a column of text,
 * `2024-01-02T03:04:05.123456+00:00` in JSON) in the contract's form, the one `Date#toISOString` writes
 * (UTC, milliseconds, `Z`): cut from the text when it is in UTC, the sessions' usual zone, else through a
 * Date. Both cut microseconds to milliseconds. A read that only shows a time so makes no Date.
 */
export function isoTimestamp(text: string): string {
  const zone = text.endsWith('+00') ? 3 : text.endsWith('+00:00') ? 6 : 0;
  const end = text.length - zone;
  if (zone && end >= 19 && text.charCodeAt(4) === 45 && (end === 19 || text.charCodeAt(19) === 46)) {
    const ms = end > 20 ? text.slice(20, Math.min(end, 23)).padEnd(3, '0') : '000';
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
  }
  return new Date(text).toISOString();
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
