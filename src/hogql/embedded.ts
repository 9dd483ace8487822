// HogQL expressions inside SQL we write ourselves: the events listing's `select` and `where`, and batch
// exports' `hogql_query`. They read the events table itself (not a SELECT of the compiler's), one row per
// event, so aggregates and window functions have no place in them.
import { sql, type SQL } from 'drizzle-orm';
import { events, persons } from '../db/schema/index.js';
import type { Node } from './ast.js';
import { QueryError } from './errors.js';
import { WINDOW_AGGREGATES, WINDOW_ONLY } from './functions.js';
import type { Binding } from './tables.js';
import { outputSql, type Typed } from './types.js';

const AGGREGATES = new Set([
  ...WINDOW_AGGREGATES,
  ...WINDOW_ONLY,
  'uniq',
  'uniqexact',
  'quantile',
  'median',
  'arrayjoin',
]);

/** Each node directly below `n`, not entering subqueries (a subquery may aggregate its own rows). */
function children(n: Node): Node[] {
  switch (n.k) {
    case 'call':
      return n.args;
    case 'array':
      return n.items;
    case 'lambda':
      return [n.body];
    case 'index':
      return [n.arr, n.index];
    case 'binop':
      return [n.left, n.right];
    case 'and':
    case 'or':
      return n.args;
    case 'not':
    case 'neg':
    case 'isnull':
      return [n.arg];
    case 'in':
      return [n.left, ...(n.list ?? [])];
    case 'between':
      return [n.arg, n.low, n.high];
    case 'interval':
      return [n.value];
    case 'case':
      return [...n.branches.flat(), ...(n.otherwise ? [n.otherwise] : [])];
    default:
      return [];
  }
}

/** Refuses what only makes sense over many rows: aggregates, window functions, arrayJoin. */
export function refuseAggregates(n: Node): void {
  if (n.k === 'call' && (n.over || AGGREGATES.has(n.name.toLowerCase())))
    throw new QueryError(`${n.name}() is not supported here: each expression is computed for one event`, n.pos);
  if (n.k === 'star') throw new QueryError('* is not supported here: name the fields', n.pos);
  for (const c of children(n)) refuseAggregates(c);
}

const PERSON_COLUMNS: Record<string, SQL> = {
  person_uuid: sql`${persons.uuid}`,
  person_key: sql`${events.person_id}`,
  person_properties: sql`${persons.properties}`,
  person_created_at: sql`${persons.created_at}`,
  person_is_identified: sql`${persons.is_identified}`,
};

/**
 * The events table as SQL that selects `FROM events` names it, with its person's columns read from `persons`
 * (`LEFT JOIN persons ON persons.id = events.person_id`), which the SQL must join when `usePerson` was called.
 */
export function eventsTable(usePerson: () => void = () => {}): Binding {
  return {
    name: 'events',
    sqlAlias: 'events',
    table: 'events',
    usePerson,
    columnSql: (name) => PERSON_COLUMNS[name] ?? sql`${events}.${sql.identifier(name)}`,
  };
}

/**
 * A value as SQL that json_build_array()/json_build_object() write as JSON: a property with its JSON type
 * (a number stays a number, an object an object), `properties` as an object, date-times as ISO text: in UTC,
 * or in their zone with its offset when they have one (toTimeZone, or inZone).
 */
export function jsonValue(node: Node, t: Typed): SQL {
  if (node.k === 'field' && t.type === 'Prop' && t.json) return t.json;
  if (t.type === 'Object') return t.sql;
  return outputSql(t);
}
