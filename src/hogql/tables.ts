import { sql, type SQL } from 'drizzle-orm';
import { QueryError } from './errors.js';
import type { Type, Typed } from './types.js';

export const TABLES = ['events', 'persons', 'person_distinct_ids'] as const;
/** The tables `events` is also read from, where its hourly counts answer a query (countsSource). */
export const COUNTS_TABLES = ['event_counts', 'event_count_deltas'] as const;
export type TableName = (typeof TABLES)[number];

/** A table or subquery in a query's FROM, under the SQL alias the compiler gave it. */
export interface Binding {
  /** The name queries use for it: its alias, else the table's name. */
  name: string | null;
  sqlAlias: string;
  table: TableName | null;
  /** A subquery's columns, by the names the subquery gave them. */
  columns?: Map<string, { sqlName: string; type: Type; ch?: string; elem?: Type }>;
  /** Brings the person's columns into an events source (see tableSource). */
  usePerson?: () => void;
  /**
   * A column's SQL where the table is not one of tableSource's subqueries (the events listing and exports
   * read the events table itself): by the name tableSource gives it (`uuid`, `person_properties`, ...).
   */
  columnSql?: (name: string) => SQL;
}

/**
 * The rows of one table that belong to the project, as a subquery. Every table a query names
 * becomes one of these, so no query reaches another project's rows: the project id is a bound
 * parameter, never text of the query. PostgreSQL pulls these subqueries up into the query, and drops
 * the persons join of `events` when nothing reads it, so they cost nothing over a hand-written query.
 */
export function tableSource(table: TableName, teamId: number): { sql: SQL; usePerson?: () => void } {
  switch (table) {
    case 'events': {
      // The person's columns and the join that brings them are added only when the query reads a person
      // field: a LEFT JOIN on every events query costs a count over many events several times its time.
      const personColumns = sql.empty();
      const personJoin = sql.empty();
      let joined = false;
      const usePerson = () => {
        if (joined) return;
        joined = true;
        personColumns.append(sql`, p.uuid as person_uuid, p.properties as person_properties,
        p.created_at as person_created_at, p.is_identified as person_is_identified`);
        personJoin.append(sql` left join persons p on p.id = ev.person_id and p.project_id = ${teamId}::int`);
      };
      return {
        sql: sql`(select ev.uuid, ev.event, ev.distinct_id, ev.properties, ev."timestamp", ev.created_at,
        ev.elements_chain, ev.person_id as person_key${personColumns} from events ev${personJoin}
        where ev.project_id = ${teamId}::int)`,
        usePerson,
      };
    }
    case 'persons':
      return {
        sql: sql`(select p.uuid, p.properties, p.created_at, p.is_identified
        from persons p where p.project_id = ${teamId}::int)`,
      };
    case 'person_distinct_ids':
      return {
        sql: sql`(select d.distinct_id, p.uuid as person_uuid
        from person_distinct_ids d join persons p on p.id = d.person_id and p.project_id = ${teamId}::int
        where d.project_id = ${teamId}::int)`,
      };
  }
}

/**
 * `events` as the project's hourly counts (drizzle/0035), for a query rollup.ts found they answer: each row an
 * hour's events of one name, `timestamp` the hour, `n` how many (the folded counts and the deltas not yet folded).
 */
export function countsSource(teamId: number): { sql: SQL; usePerson?: () => void } {
  return {
    sql: sql`(select c.event, c.hour as "timestamp", c.n from event_counts c where c.project_id = ${teamId}::int
      union all select d.event, d.hour, d.n from event_count_deltas d where d.project_id = ${teamId}::int)`,
  };
}

/** `SELECT *` of each table, in PostHog's order where it has these columns. */
export const STAR: Record<TableName, string[]> = {
  events: ['uuid', 'event', 'properties', 'timestamp', 'distinct_id', 'elements_chain', 'created_at', 'person_id'],
  persons: ['id', 'properties', 'created_at', 'is_identified'],
  person_distinct_ids: ['distinct_id', 'person_id'],
};

/** Every field each table offers, for error messages. */
export const FIELDS: Record<TableName, string[]> = {
  events: [
    ...STAR.events,
    'team_id',
    '$session_id',
    '$window_id',
    'person.id',
    'person.properties',
    'person.created_at',
    'person.is_identified',
  ],
  persons: [...STAR.persons, 'team_id'],
  person_distinct_ids: [...STAR.person_distinct_ids, 'team_id'],
};

/** A JSON path read as text: every key a bound parameter. */
export function property(base: SQL, keys: string[]): Typed {
  for (const k of keys) if (k.includes('\0')) throw new QueryError('Property names may not contain NUL characters');
  let out = base;
  let json = base;
  keys.forEach((k, i) => {
    out = i === keys.length - 1 ? sql`(${out} ->> ${k}::text)` : sql`(${out} -> ${k}::text)`;
    json = sql`(${json} -> ${k}::text)`;
  });
  return { sql: out, type: 'Prop', json };
}

/** A field of a table by its chain (`event`, `properties.$browser`, `person.properties.email`), or undefined. */
export function tableField(b: Binding, chain: string[], teamId: number): Typed | undefined {
  const a = sql`${sql.identifier(b.sqlAlias)}`;
  const col = (name: string) => b.columnSql?.(name) ?? sql`${a}.${sql.identifier(name)}`;
  const [head, ...rest] = chain;
  if (head === undefined) return undefined;
  if (b.columns) {
    const c = b.columns.get(head);
    if (!c) return undefined;
    if (!rest.length) return { sql: col(c.sqlName), type: c.type, ch: c.ch, elem: c.elem };
    if (c.type === 'Object') return property(col(c.sqlName), rest);
    return undefined;
  }
  const simple = (type: Type, name: string, ch?: string): Typed | undefined =>
    rest.length ? undefined : { sql: col(name), type, ch };
  const json = (name: string): Typed => (rest.length ? property(col(name), rest) : { sql: col(name), type: 'Object' });
  if (head === 'team_id') return rest.length ? undefined : { sql: sql`${teamId}::bigint`, type: 'Int' };
  switch (b.table) {
    case 'events':
      switch (head) {
        case 'uuid':
          return simple('UUID', 'uuid');
        case 'event':
        case 'distinct_id':
        case 'elements_chain':
          return simple('String', head);
        case 'timestamp':
        case 'created_at':
          return simple('DateTime', head);
        case 'person_id':
          b.usePerson?.();
          return rest.length
            ? undefined
            : {
                sql: sql`coalesce(${col('person_uuid')}, md5(coalesce('p' || ${col('person_key')}::text,
                  'd' || ${col('distinct_id')}))::uuid)`,
                type: 'UUID',
              };
        case '$session_id':
        case '$window_id':
          return rest.length ? undefined : property(col('properties'), [head]);
        case 'properties':
          return json('properties');
        case 'person': {
          b.usePerson?.();
          const [field, ...more] = rest;
          if (field === 'id' && !more.length) return { sql: col('person_uuid'), type: 'UUID' };
          if (field === 'created_at' && !more.length) return { sql: col('person_created_at'), type: 'DateTime' };
          if (field === 'is_identified' && !more.length) return { sql: col('person_is_identified'), type: 'Bool' };
          if (field === 'properties')
            return more.length
              ? property(col('person_properties'), more)
              : { sql: col('person_properties'), type: 'Object' };
          return undefined;
        }
      }
      return undefined;
    case 'persons':
      switch (head) {
        case 'id':
          return simple('UUID', 'uuid');
        case 'created_at':
          return simple('DateTime', 'created_at');
        case 'is_identified':
          return simple('Bool', 'is_identified');
        case 'properties':
          return json('properties');
      }
      return undefined;
    case 'person_distinct_ids':
      if (head === 'distinct_id') return simple('String', 'distinct_id');
      if (head === 'person_id') return simple('UUID', 'person_uuid');
      return undefined;
  }
  return undefined;
}

/**
 * For `uniq(person_id)` and `count(DISTINCT person_id)` over events: a value with as many distinct values as the
 * event's `person_id` (one per stored person, or per distinct id for an event without one) that needs no join
 * of persons, which would cost a count of active users over many events most of its time. Undefined for any
 * other field or binding.
 */
export function personKey(b: Binding, chain: string[]): SQL | undefined {
  if (b.table !== 'events' || b.columns || chain.length !== 1 || chain[0] !== 'person_id') return undefined;
  const col = (name: string) => b.columnSql?.(name) ?? sql`${sql.identifier(b.sqlAlias)}.${sql.identifier(name)}`;
  return sql`coalesce(${col('person_key')}::text, 'd' || ${col('distinct_id')})`;
}

/** The whole event, or its person, as one JSON object (the EventsQuery's `*` and `person`). */
export function objectOf(b: Binding, of: 'event' | 'person', teamId: number): Typed {
  const a = sql`${sql.identifier(b.sqlAlias)}`;
  const col = (name: string) => b.columnSql?.(name) ?? sql`${a}.${sql.identifier(name)}`;
  const iso = (name: string) => sql`to_char(${col(name)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
  if (of === 'person') {
    b.usePerson?.();
    return {
      sql: sql`case when ${col('person_uuid')} is null then null else json_build_object(
        'id', ${col('person_uuid')}, 'created_at', ${iso('person_created_at')},
        'properties', ${col('person_properties')}, 'distinct_id', ${col('distinct_id')}) end`,
      type: 'Json',
      ch: "Tuple(id UUID, created_at DateTime64(6, 'UTC'), properties String, distinct_id String)",
    };
  }
  return {
    sql: sql`json_build_object('uuid', ${col('uuid')}, 'event', ${col('event')},
      'properties', ${col('properties')}, 'timestamp', ${iso('timestamp')}, 'team_id', ${teamId}::int,
      'distinct_id', ${col('distinct_id')}, 'elements_chain', ${col('elements_chain')},
      'created_at', ${iso('created_at')})`,
    type: 'Json',
    ch:
      "Tuple(uuid UUID, event String, properties String, timestamp DateTime64(6, 'UTC'), team_id Int64, " +
      "distinct_id String, elements_chain String, created_at DateTime64(6, 'UTC'))",
  };
}
