import { and, asc, eq, inArray, notInArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import type { BatchExportRow } from './queries.js';
import { events, person_distinct_ids, persons } from '../db/schema/index.js';
import { filterSql } from '../events/queries.js';
import { parseFilterList } from '../events/filters.js';
import { compileExport } from './hogql.js';
import { projectTimezone } from '../projects/queries.js';
import { copyBatches, inlineParams, postgresClient } from './copy-source.js';
import { decodeCopyRows } from './copy-text.js';
import { earliestSession, sessionsSource } from './sessions.js';

/** A column of the exported records, with the type a receiving table gives it. */
export interface ExportColumn {
  name: string;
  type: 'text' | 'timestamptz' | 'bigint' | 'jsonb' | 'integer' | 'boolean';
}

/**
 * `json`: each record one JSON object, keys in `columns` order. `columns`: each record the columns'
 * values, typed as `columns` says, for a table with those columns.
 */
export type RecordFormat = 'json' | 'columns';

export interface RecordBatch {
  /** Records in the batch. */
  count: number;
  /** The records in PostgreSQL's COPY text format, one a line (see copy-text.ts). */
  data: Buffer;
}

/** The batch's JSON objects as JSON lines, each ending with a newline. */
export const jsonLines = (batch: RecordBatch): Buffer => decodeCopyRows(batch.data);

/** The batch's JSON objects as strings. */
export function jsonTexts(batch: RecordBatch): string[] {
  const text = jsonLines(batch).toString('utf8');
  return text ? text.slice(0, -1).split('\n') : [];
}

/**
 * The records of one run, in batches so memory does not grow with the interval: one COPY stream,
 * events in (timestamp, id) order, persons in (updated_at, id, distinct_id) order.
 */
export interface RecordSource {
  columns: ExportColumn[];
  /** Columns that identify a record, for destinations that upsert; null when the fields have none. */
  key: string[] | null;
  /** Whether `batches` can give the `columns` format. */
  columnar: boolean;
  count(): Promise<number>;
  batches(size: number, format?: RecordFormat): AsyncGenerator<RecordBatch>;
}

const isoOf = (col: SQL | unknown) => sql`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** A column of the default fields, with the SQL that reads its value. */
interface Field extends ExportColumn {
  value: SQL;
}

const columnsOf = (fields: Field[]): ExportColumn[] => fields.map(({ name, type }) => ({ name, type }));
/** Each field as a column value, for the `columns` format (COPY writes timestamps as the session's ISO, UTC). */
const valuesOf = (fields: Field[]): SQL[] => fields.map((f) => f.value);
/** Each field as a JSON pair: timestamps as ISO strings to the microsecond, in UTC. */
const pairsOf = (fields: Field[]): [string, SQL][] =>
  fields.map((f) => [f.name, f.type === 'timestamptz' ? isoOf(f.value) : f.value]);

function jsonObject(pairs: [string, SQL][]): SQL {
  return sql`json_build_object(${sql.join(
    pairs.map(([k, v]) => sql`${k}::text, ${v}`),
    sql`, `,
  )})::text`;
}

function eventFilters(exp: BatchExportRow): SQL[] {
  const out: SQL[] = [];
  const include = exp.destination_config.include_events as string[] | null | undefined;
  const exclude = exp.destination_config.exclude_events as string[] | null | undefined;
  if (include?.length) out.push(inArray(events.event, include));
  if (exclude?.length) out.push(notInArray(events.event, exclude));
  // Checked when saved; person filters read the persons row every events query joins.
  const filters = parseFilterList(exp.filters, 'filters');
  if (filters) out.push(filterSql(filters));
  return out;
}

const EVENT_FIELDS: Field[] = [
  { name: 'uuid', type: 'text', value: sql`${events.uuid}::text` },
  { name: 'event', type: 'text', value: sql`${events.event}` },
  { name: 'properties', type: 'jsonb', value: sql`${events.properties}` },
  { name: 'distinct_id', type: 'text', value: sql`${events.distinct_id}` },
  { name: 'team_id', type: 'integer', value: sql`${events.project_id}` },
  { name: 'timestamp', type: 'timestamptz', value: sql`${events.timestamp}` },
  { name: 'created_at', type: 'timestamptz', value: sql`${events.created_at}` },
  { name: 'elements_chain', type: 'text', value: sql`${events.elements_chain}` },
  { name: 'person_id', type: 'text', value: sql`${persons.uuid}::text` },
  { name: 'person_properties', type: 'jsonb', value: sql`${persons.properties}` },
];

async function eventsSource(
  db: Db,
  exp: BatchExportRow,
  start: Date | null,
  end: Date,
  deadlineMs: number,
): Promise<RecordSource> {
  let pairs: [string, SQL][];
  let columns: ExportColumn[];
  let key: string[] | null = ['uuid'];
  const where: SQL[] = [
    eq(events.project_id, exp.project_id),
    sql`${events.timestamp} < ${end.toISOString()}::timestamptz`,
  ];
  if (start) where.push(sql`${events.timestamp} >= ${start.toISOString()}::timestamptz`);
  where.push(...eventFilters(exp));
  if (exp.hogql_query) {
    // In the project's timezone, as PostHog prints an export's query for its team.
    const query = await compileExport(exp.hogql_query, exp.project_id, await projectTimezone(db, exp.project_id));
    pairs = query.pairs;
    columns = query.columns;
    if (query.where) where.push(query.where);
    key = query.key;
  } else {
    pairs = pairsOf(EVENT_FIELDS);
    columns = columnsOf(EVENT_FIELDS);
  }
  const condition = and(...where)!;
  const line = jsonObject(pairs);
  const client = postgresClient(db);
  // The default fields straight from their columns, for a table with those columns.
  const raw: SQL[] | null = exp.hogql_query ? null : valuesOf(EVENT_FIELDS);
  return {
    columns,
    key,
    columnar: !!raw,
    async count() {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(events)
        .leftJoin(persons, eq(persons.id, events.person_id))
        .where(condition);
      return Number(row?.n ?? 0);
    },
    batches(size, format = 'json') {
      if (format === 'columns') {
        if (!raw) throw new Error('These records have no columns format');
        // A table has no order, so the scan takes whichever plan is cheapest.
        const query = db
          .select({ row: sql`${sql.join(raw, sql`, `)}` })
          .from(events)
          .leftJoin(persons, eq(persons.id, events.person_id))
          .where(condition);
        return copyBatches(client, inlineParams(query.toSQL()), size, deadlineMs);
      }
      const query = db
        .select({ line: sql`${line}` })
        .from(events)
        .leftJoin(persons, eq(persons.id, events.person_id))
        .where(condition)
        .orderBy(sql`${events.timestamp} asc nulls first`, sql`${events.id} asc nulls first`);
      return copyBatches(client, inlineParams(query.toSQL()), size, deadlineMs);
    },
  };
}

const PERSON_FIELDS: Field[] = [
  { name: 'team_id', type: 'integer', value: sql`${persons.project_id}` },
  { name: 'distinct_id', type: 'text', value: sql`${person_distinct_ids.distinct_id}` },
  { name: 'person_id', type: 'text', value: sql`${persons.uuid}::text` },
  { name: 'properties', type: 'jsonb', value: sql`${persons.properties}` },
  { name: 'is_identified', type: 'boolean', value: sql`${persons.is_identified}` },
  { name: 'created_at', type: 'timestamptz', value: sql`${persons.created_at}` },
  { name: 'updated_at', type: 'timestamptz', value: sql`${persons.updated_at}` },
];

function personsSource(db: Db, exp: BatchExportRow, start: Date | null, end: Date, deadlineMs: number): RecordSource {
  const p = persons;
  const d = person_distinct_ids;
  const where: SQL[] = [eq(p.project_id, exp.project_id), sql`${p.updated_at} < ${end.toISOString()}::timestamptz`];
  if (start) where.push(sql`${p.updated_at} >= ${start.toISOString()}::timestamptz`);
  const condition = and(...where)!;
  const line = jsonObject(pairsOf(PERSON_FIELDS));
  const client = postgresClient(db);
  const raw = valuesOf(PERSON_FIELDS);
  return {
    columnar: true,
    columns: columnsOf(PERSON_FIELDS),
    key: ['team_id', 'distinct_id'],
    async count() {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(p)
        .innerJoin(d, eq(d.person_id, p.id))
        .where(condition);
      return Number(row?.n ?? 0);
    },
    batches(size, format = 'json') {
      const query =
        format === 'columns'
          ? db
              .select({ row: sql`${sql.join(raw, sql`, `)}` })
              .from(p)
              .innerJoin(d, eq(d.person_id, p.id))
              .where(condition)
          : db
              .select({ line: sql`${line}` })
              .from(p)
              .innerJoin(d, eq(d.person_id, p.id))
              .where(condition)
              .orderBy(asc(p.updated_at), asc(p.id), asc(d.distinct_id));
      return copyBatches(client, inlineParams(query.toSQL()), size, deadlineMs);
    },
  };
}

/** What an export exports: a null model (PostHog's model allows it) runs as `events`, as PostHog's workflows do. */
export const exportModel = (exp: { model: string | null }): string => exp.model ?? 'events';

/** `deadlineMs` bounds each step of reading (see copyBatches). */
export async function recordSource(
  db: Db,
  exp: BatchExportRow,
  start: Date | null,
  end: Date,
  deadlineMs = 300_000,
): Promise<RecordSource> {
  if (exp.model === 'sessions') return sessionsSource(db, exp, start, end, deadlineMs);
  return exp.model === 'persons'
    ? personsSource(db, exp, start, end, deadlineMs)
    : eventsSource(db, exp, start, end, deadlineMs);
}

/** The earliest time the export has data for, used to clamp backfills (null: no data at all). */
export async function earliestData(db: Db, exp: BatchExportRow): Promise<Date | null> {
  if (exp.model === 'sessions') return earliestSession(db, exp);
  if (exp.model === 'persons') {
    const [row] = await db
      .select({ t: sql<string | null>`${isoOf(sql`min(${persons.updated_at})`)}` })
      .from(persons)
      .where(eq(persons.project_id, exp.project_id));
    return row?.t ? new Date(row.t) : null;
  }
  const [row] = await db
    .select({ t: sql<string | null>`${isoOf(sql`min(${events.timestamp})`)}` })
    .from(events)
    .leftJoin(persons, eq(persons.id, events.person_id))
    .where(and(eq(events.project_id, exp.project_id), ...eventFilters(exp)));
  return row?.t ? new Date(row.t) : null;
}
