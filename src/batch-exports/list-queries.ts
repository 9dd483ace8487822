import { and, desc, eq, getTableColumns, ilike, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { batch_export_backfills, batch_export_logs, batch_export_runs } from '../db/schema/index.js';
import type { RunRow } from './queries.js';
import type { BackfillRow } from './run-queries.js';
import { countWhere } from '../db/queries/util.js';

/** A position in a keyset-ordered list; `r` marks a cursor that pages backwards. */
export interface Cursor {
  v: string;
  id: string;
  r?: 1;
}

export interface CursorPage<T> {
  rows: T[];
  next: Cursor | null;
  previous: Cursor | null;
}

const iso = (col: PgColumn) => sql<string>`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** DRF's CursorPagination over (col, id), both directions, without counting. */
async function keysetPage<T>(
  db: Db,
  table: PgTable,
  col: PgColumn,
  idCol: PgColumn,
  where: SQL,
  opts: { descending: boolean; cursor: Cursor | undefined; limit: number },
): Promise<CursorPage<T>> {
  const reverse = opts.cursor?.r === 1;
  const down = opts.descending !== reverse;
  const conditions = [where];
  if (opts.cursor) {
    const v = sql`${opts.cursor.v}::timestamptz`;
    conditions.push(
      down ? sql`(${col}, ${idCol}) < (${v}, ${opts.cursor.id})` : sql`(${col}, ${idCol}) > (${v}, ${opts.cursor.id})`,
    );
  }
  const rows = (await db
    .select({ ...getTableColumns(table), _cursor: iso(col) })
    .from(table)
    .where(and(...conditions))
    .orderBy(...(down ? [desc(col), desc(idCol)] : [col, idCol]))
    .limit(opts.limit + 1)) as (T & { _cursor: string; id: string })[];
  const more = rows.length > opts.limit;
  const page = rows.slice(0, opts.limit);
  if (reverse) page.reverse();
  const first = page[0];
  const last = page[page.length - 1];
  const hasNext = reverse ? Boolean(opts.cursor) : more;
  const hasPrevious = reverse ? more : Boolean(opts.cursor);
  return {
    rows: page.map(({ _cursor, ...row }) => row as unknown as T),
    next: hasNext && last ? { v: last._cursor, id: last.id } : null,
    previous: hasPrevious && first ? { v: first._cursor, id: first.id, r: 1 } : null,
  };
}

export interface RunFilter {
  orderBy: 'created_at' | 'data_interval_start';
  descending: boolean;
  from: Date;
  to: Date;
}

export async function listRuns(
  db: Db,
  exportId: string,
  filter: RunFilter,
  cursor: Cursor | undefined,
  limit: number,
): Promise<CursorPage<RunRow>> {
  const r = batch_export_runs;
  const [from, to] = [filter.from.toISOString(), filter.to.toISOString()];
  const range =
    filter.orderBy === 'created_at'
      ? sql`${r.created_at} between ${from}::timestamptz and ${to}::timestamptz`
      : sql`${r.data_interval_start} >= ${from}::timestamptz and ${r.data_interval_end} <= ${to}::timestamptz`;
  const col = filter.orderBy === 'created_at' ? r.created_at : r.data_interval_start;
  return keysetPage<RunRow>(db, r, col, r.id, and(eq(r.batch_export_id, exportId), range)!, {
    descending: filter.descending,
    cursor,
    limit,
  });
}

export async function listBackfills(
  db: Db,
  exportId: string,
  orderBy: 'created_at' | 'start_at',
  descending: boolean,
  cursor: Cursor | undefined,
  limit: number,
): Promise<CursorPage<BackfillRow>> {
  const b = batch_export_backfills;
  return keysetPage<BackfillRow>(
    db,
    b,
    orderBy === 'created_at' ? b.created_at : b.start_at,
    b.id,
    eq(b.batch_export_id, exportId),
    {
      descending,
      cursor,
      limit,
    },
  );
}

export type LogRow = typeof batch_export_logs.$inferSelect;

export async function insertLog(
  db: Db,
  entry: { project_id: number; batch_export_id: string; instance_id: string; level: string; message: string },
): Promise<void> {
  await db.insert(batch_export_logs).values(entry);
}

export interface LogFilter {
  levels?: string[];
  search?: string;
  after?: Date;
  before?: Date;
  instance_id?: string;
}

/** Log entries of one export, newest first. */
export async function listLogs(
  db: Db,
  exportId: string,
  filter: LogFilter,
  page: { limit: number; offset: number },
): Promise<{ count: number; rows: (LogRow & { ts: string })[] }> {
  const l = batch_export_logs;
  const conditions: SQL[] = [eq(l.batch_export_id, exportId)];
  if (filter.levels?.length) conditions.push(sql`upper(${l.level}) in ${filter.levels.map((x) => x.toUpperCase())}`);
  if (filter.search) conditions.push(ilike(l.message, `%${filter.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  if (filter.after) conditions.push(sql`${l.timestamp} > ${filter.after.toISOString()}::timestamptz`);
  if (filter.before) conditions.push(sql`${l.timestamp} < ${filter.before.toISOString()}::timestamptz`);
  if (filter.instance_id) conditions.push(eq(l.instance_id, filter.instance_id));
  const where = and(...conditions);
  const [count, rows] = await Promise.all([
    countWhere(db, l, where),
    db
      .select({ ...getTableColumns(l), ts: iso(l.timestamp) })
      .from(l)
      .where(where)
      .orderBy(desc(l.timestamp), desc(l.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}
