import { and, asc, eq, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { SelectedFields } from 'drizzle-orm/pg-core';
import { rowsOf } from '../db/queries/util.js';
import { isoText, jsonObject } from '../db/queries/json.js';
import { prepared } from '../db/prepared.js';
import type { Db } from '../db/client.js';
import { event_uuids, events, person_distinct_ids, persons } from '../db/schema/index.js';
import { dateValue } from '../core/dates.js';
import { ApiError } from '../core/errors.js';
import { sqlState } from '../core/sql-state.js';
import { needsPersons, type FilterNode, type Scalar } from './filters.js';

export interface EventRow {
  /** The `select` values, when the listing asked for them. */
  selected?: unknown[];
  id: number;
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  timestamp: Date;
  /** The timestamp to the microsecond, for exact cursors. */
  ts_text: string;
  elements_chain: string;
  person_id: number | null;
}

export interface PersonRow {
  id: number;
  uuid: string;
  is_identified: boolean;
  properties: Record<string, unknown>;
  distinct_ids: string[];
}

export interface EventQuery {
  projectId: number;
  event?: string;
  distinctId?: string;
  personId?: number;
  /** Exclusive bounds, ISO strings passed to PostgreSQL as they are (microseconds survive). */
  after?: string;
  before?: string;
  /**
   * Tiebreaker for the bound in the listing's direction: events at exactly that time with a smaller (newest
   * first) or larger id.
   */
  cursorId?: number;
  ascending: boolean;
  filters?: FilterNode;
  /** Further conditions (the `where` parameter), already compiled. */
  where?: SQL[];
  /** With `select`: these JSON values are returned per event, as `selected`. */
  select?: SQL[];
  /** `where` or `select` read the event's person: `persons` is joined. */
  joinPersons?: boolean;
  limit: number;
  offset: number;
}

const columns = {
  id: events.id,
  uuid: events.uuid,
  event: events.event,
  distinct_id: events.distinct_id,
  properties: events.properties,
  timestamp: events.timestamp,
  ts_text: sql<string>`to_char(${events.timestamp} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
  elements_chain: events.elements_chain,
  person_id: events.person_id,
};

/**
 * An event as the JSON listing reads it: the contract's object written by PostgreSQL but for its
 * person and its parsed elements, which Node adds, with what the page's links and persons need.
 */
export interface EventJsonRow {
  id: number;
  ts_text: string;
  elements_chain: string;
  person_id: number | null;
  json: string;
}

const jsonColumns = {
  id: events.id,
  ts_text: columns.ts_text,
  elements_chain: events.elements_chain,
  person_id: events.person_id,
  json: sql<string>`${jsonObject({
    id: events.uuid,
    distinct_id: events.distinct_id,
    properties: events.properties,
    event: events.event,
    timestamp: isoText(events.timestamp),
    elements_chain: events.elements_chain,
  })}::text`,
};

const NUMBER_TEXT = `^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$`;

function scalarMatch(props: SQL, key: string, v: Scalar): SQL {
  // Numbers match numerically (5 = 5.0) and as text ("5"); strings and booleans as text.
  const text = typeof v === 'string' ? v : String(v);
  return sql`(${props} -> ${key} = ${JSON.stringify(v)}::jsonb or ${props} ->> ${key} = ${text})`;
}

function propertySql(node: Extract<FilterNode, { kind: 'property' }>): SQL {
  const props = node.type === 'person' ? sql`${persons.properties}` : sql`${events.properties}`;
  const key = node.key;
  const text = sql`(${props} ->> ${key})`;
  const single = (Array.isArray(node.value) ? node.value[0] : node.value) as Scalar;
  const values = Array.isArray(node.value) ? node.value : [single];
  const numeric = sql`(case when ${text} ~ ${NUMBER_TEXT} then ${text}::numeric end)`;
  const pattern = `%${String(single).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  switch (node.operator) {
    case 'exact':
      return sql`(${or(...values.map((v) => scalarMatch(props, key, v)))})`;
    case 'is_not':
      return sql`not coalesce(${or(...values.map((v) => scalarMatch(props, key, v)))}, false)`;
    case 'icontains':
      return sql`coalesce(${text} ilike ${pattern}, false)`;
    case 'not_icontains':
      return sql`not coalesce(${text} ilike ${pattern}, false)`;
    case 'regex':
      return sql`coalesce(${text} ~ ${String(single)}, false)`;
    case 'not_regex':
      return sql`not coalesce(${text} ~ ${String(single)}, false)`;
    case 'gt':
      return sql`coalesce(${numeric} > ${String(single)}::numeric, false)`;
    case 'gte':
      return sql`coalesce(${numeric} >= ${String(single)}::numeric, false)`;
    case 'lt':
      return sql`coalesce(${numeric} < ${String(single)}::numeric, false)`;
    case 'lte':
      return sql`coalesce(${numeric} <= ${String(single)}::numeric, false)`;
    case 'is_set':
      return sql`coalesce(jsonb_typeof(${props} -> ${key}), 'null') <> 'null'`;
    case 'is_not_set':
      return sql`coalesce(jsonb_typeof(${props} -> ${key}), 'null') = 'null'`;
    case 'is_date_before':
      return sql`coalesce(try_timestamptz(${text}) < ${dateValue(single)}::timestamptz, false)`;
    case 'is_date_after':
      return sql`coalesce(try_timestamptz(${text}) > ${dateValue(single)}::timestamptz, false)`;
    case 'is_date_exact':
      return sql`coalesce(try_timestamptz(${text}) = ${dateValue(single)}::timestamptz, false)`;
  }
}

export function filterSql(node: FilterNode): SQL {
  if (node.kind === 'property') return propertySql(node);
  const parts = node.values.map(filterSql);
  if (!parts.length) return sql`true`;
  return sql`(${(node.op === 'AND' ? and : or)(...parts)})`;
}

const NEWEST_FIRST = [sql`${events.timestamp} desc nulls last`, sql`${events.id} desc nulls last`];
const OLDEST_FIRST = [sql`${events.timestamp} asc nulls first`, sql`${events.id} asc nulls first`];

// The unfiltered listing, newest first, is what clients page into first: built once, in each form.
// (Drizzle types a select by its fields; the callers type the rows.)
const newestPage = (fields: typeof columns | typeof jsonColumns, name: string) =>
  prepared(name, (db, name) =>
    db
      .select(fields as typeof columns)
      .from(events)
      .where(eq(events.project_id, sql.placeholder('projectId')))
      .orderBy(...NEWEST_FIRST)
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .prepare(name),
  );
const newestRows = newestPage(columns, 'events_newest_page');
const newestJson = newestPage(jsonColumns, 'events_newest_page_json');

const unfiltered = (q: EventQuery) =>
  !q.ascending &&
  [q.event, q.distinctId, q.personId, q.before, q.after, q.cursorId, q.filters].every((v) => v === undefined) &&
  !q.where?.length &&
  !q.select?.length;

/** One page plus one row, so the caller knows whether there is a next page. */
export async function listEvents(db: Db, q: EventQuery): Promise<EventRow[]> {
  if (unfiltered(q)) {
    const values = { projectId: q.projectId, limit: q.limit + 1, offset: q.offset };
    return (await newestRows(db).execute(values)) as unknown as EventRow[];
  }
  const fields = q.select?.length
    ? { ...columns, selected: sql<unknown[]>`json_build_array(${sql.join(q.select, sql`, `)})` }
    : columns;
  return (await filteredPage(db, q, fields)) as unknown as EventRow[];
}

/** `listEvents` for the JSON listing (no `select`): each event as PostgreSQL writes it. */
export async function listEventsJson(db: Db, q: EventQuery): Promise<EventJsonRow[]> {
  if (unfiltered(q)) {
    const values = { projectId: q.projectId, limit: q.limit + 1, offset: q.offset };
    return (await newestJson(db).execute(values)) as unknown as EventJsonRow[];
  }
  return (await filteredPage(db, q, jsonColumns)) as unknown as EventJsonRow[];
}

/** A property filter's regular expression PostgreSQL cannot compile is the caller's 400, not a 500. */
async function filteredPage(db: Db, q: EventQuery, fields: SelectedFields) {
  const conds: (SQL | undefined)[] = [eq(events.project_id, q.projectId)];
  if (q.event !== undefined) conds.push(eq(events.event, q.event));
  if (q.distinctId !== undefined) conds.push(eq(events.distinct_id, q.distinctId));
  if (q.personId !== undefined) conds.push(eq(events.person_id, q.personId));
  const bound = (ts: string, op: '<' | '>', withCursor: boolean) =>
    withCursor && q.cursorId !== undefined
      ? sql`(${events.timestamp}, ${events.id}) ${sql.raw(op)} (${ts}::timestamptz, ${q.cursorId}::bigint)`
      : sql`${events.timestamp} ${sql.raw(op)} ${ts}::timestamptz`;
  if (q.before !== undefined) conds.push(bound(q.before, '<', !q.ascending));
  if (q.after !== undefined) conds.push(bound(q.after, '>', q.ascending));
  if (q.filters) conds.push(filterSql(q.filters));
  conds.push(...(q.where ?? []));
  let query = db
    .select(fields as typeof columns)
    .from(events)
    .$dynamic();
  if (needsPersons(q.filters) || q.joinPersons) query = query.leftJoin(persons, eq(persons.id, events.person_id));
  // The listing indexes are `timestamp DESC NULLS LAST, id DESC NULLS LAST`; PostgreSQL only walks them
  // (forwards or backwards) for an ORDER BY that names the same null placement.
  const order = q.ascending ? OLDEST_FIRST : NEWEST_FIRST;
  try {
    return await query
      .where(and(...conds))
      .orderBy(...order)
      .limit(q.limit + 1)
      .offset(q.offset);
  } catch (err) {
    if (sqlState(err) === '2201B')
      throw ApiError.validation('properties', 'Invalid regular expression in a property filter.');
    throw err;
  }
}

export async function getEvent(db: Db, projectId: number, uuid: string): Promise<EventRow | undefined> {
  const [row] = await db
    .select(columns)
    .from(events)
    .where(
      and(
        eq(events.project_id, projectId),
        eq(events.uuid, uuid),
        // `events` has no index on uuid (a partitioned table's unique index must hold the timestamp):
        // the uuid's timestamp, from `event_uuids`, names the one partition and index range to read.
        eq(
          events.timestamp,
          sql`(select ${event_uuids.timestamp} from ${event_uuids}
            where ${event_uuids.project_id} = ${projectId} and ${event_uuids.uuid} = ${uuid})`,
        ),
      ),
    )
    .limit(1);
  return row as EventRow | undefined;
}

export async function personIdByUuid(db: Db, projectId: number, uuid: string): Promise<number | undefined> {
  const [row] = await db
    .select({ id: persons.id })
    .from(persons)
    .where(and(eq(persons.project_id, projectId), eq(persons.uuid, uuid)))
    .limit(1);
  return row?.id;
}

/** The persons of a page of events, with their distinct ids. */
export async function personsByIds(db: Db, projectId: number, ids: number[]): Promise<Map<number, PersonRow>> {
  const out = new Map<number, PersonRow>();
  if (!ids.length) return out;
  const rows = await db
    .select({
      id: persons.id,
      uuid: persons.uuid,
      is_identified: persons.is_identified,
      properties: persons.properties,
    })
    .from(persons)
    .where(and(eq(persons.project_id, projectId), inArray(persons.id, ids)));
  for (const r of rows) out.set(r.id, { ...r, distinct_ids: [] });
  const links = await db
    .select({ person_id: person_distinct_ids.person_id, distinct_id: person_distinct_ids.distinct_id })
    .from(person_distinct_ids)
    .where(and(eq(person_distinct_ids.project_id, projectId), inArray(person_distinct_ids.person_id, ids)))
    .orderBy(asc(person_distinct_ids.distinct_id));
  for (const l of links) out.get(l.person_id)?.distinct_ids.push(l.distinct_id);
  return out;
}

export interface ValuesQuery {
  projectId: number;
  key: string;
  isColumn: boolean;
  value?: string;
  eventNames?: string[];
  since: Date;
}

const VALUES_LIMIT = 100;
/** Like PostHog's sampling: values come from the newest events of the window, at most this many. */
const VALUES_SAMPLE = 100_000;

/** Distinct values, most frequent first; list values count element by element. */
export async function propertyValues(db: Db, q: ValuesQuery): Promise<string[]> {
  const conds: SQL[] = [
    eq(events.project_id, q.projectId),
    sql`${events.timestamp} >= ${q.since.toISOString()}::timestamptz`,
  ];
  if (q.eventNames?.length) conds.push(inArray(events.event, q.eventNames));
  let picked: SQL;
  let expand = sql`p`;
  if (q.isColumn) {
    picked = q.key === 'event' ? sql`${events.event}` : sql`${events.distinct_id}`;
  } else if (q.key === 'custom_event') {
    picked = sql`${events.event}`;
    conds.push(sql`${events.event} not like '$%'`);
  } else {
    picked = sql`(${events.properties} -> ${q.key})`;
    conds.push(sql`${picked} is not null`);
    expand = sql`jsonb_array_elements_text(case when jsonb_typeof(p) = 'array' then p else jsonb_build_array(p) end)`;
  }
  const pattern = q.value ? `%${q.value.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined;
  const result = await db.execute(sql`
    select v as name, count(*) as n from (
      select ${expand} as v from (
        select ${picked} as p from ${events} where ${and(...conds)}
        order by ${events.timestamp} desc nulls last limit ${VALUES_SAMPLE}
      ) as sample
    ) as s
    where v is not null ${pattern ? sql`and v ilike ${pattern}` : sql``}
    group by v order by n desc, v limit ${VALUES_LIMIT}`);
  return rowsOf<{ name: string }>(result).map((r) => r.name);
}
