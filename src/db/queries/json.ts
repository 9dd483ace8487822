import { sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

/**
 * An answer's object written by PostgreSQL, keys in the order given, for the list reads: the server
 * then sends the text as it is instead of parsing every column of every row and serializing it again.
 * `to_json` of a row, unlike `json_build_object`, writes no spaces between keys and values (a tenth
 * of a page's bytes). Keys are code, never input.
 */
export function jsonObject(fields: Record<string, SQL | PgColumn>): SQL<string> {
  const columns = Object.entries(fields).map(([key, value]) => {
    if (!/^[a-z_0-9]+$/.test(key)) throw new Error(`${key}: not a JSON key this builder writes`);
    return sql`${value} as ${sql.raw(`"${key}"`)}`;
  });
  return sql<string>`(select to_json(json_row) from (select ${sql.join(columns, sql`, `)}) as json_row)`;
}

/** A timestamptz as the contract writes it, the form of `Date#toISOString` (UTC, milliseconds cut, `Z`). */
export const isoText = (column: SQL | PgColumn): SQL<string | null> =>
  sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
