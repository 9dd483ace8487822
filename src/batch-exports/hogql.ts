// An export's `hogql_query`: `SELECT <expressions> FROM events [WHERE <condition>]`, one record per event,
// with PostHog's refusals (posthog/batch_exports/http.py) for what an export cannot be.
import type { SQL } from 'drizzle-orm';
import {
  compileExpression,
  isSet,
  parseQuery,
  print,
  printSelect,
  QueryError,
  type Node,
  type Select,
} from '../hogql/index.js';
import { eventsTable, jsonValue, refuseAggregates } from '../hogql/embedded.js';
import { toBool, type Typed } from '../hogql/types.js';
import { ApiError } from '../core/errors.js';
import type { ExportColumn } from './records.js';

const MAX_FIELDS = 50;

/** A field of the query: what it computes and the name its values are exported under. */
interface Field {
  expr: Node;
  alias: string;
}

/** A column or property keeps its own name, anything else is named as written (as PostHog names them). */
function defaultAlias(e: Node): string {
  if (e.k === 'field') return e.chain[e.chain.length - 1]!;
  return print(e);
}

/** The query as an export runs it, or a QueryError with PostHog's words. */
async function parseExport(text: string): Promise<{ select: Select; fields: Field[] }> {
  let q: Awaited<ReturnType<typeof parseQuery>>;
  try {
    q = await parseQuery(text);
  } catch (err) {
    if (err instanceof QueryError && err.syntax) throw new QueryError(`Failed to parse query: ${err.message}`);
    throw err;
  }
  if (isSet(q)) throw new QueryError('UNIONs are not supported');
  if (q.ctes?.length) throw new QueryError('Subqueries or CTEs are not supported');
  if (!q.from) throw new QueryError('Query must SELECT FROM events');
  if (q.from.k === 'subquery') throw new QueryError('Subqueries or CTEs are not supported');
  if (q.from.name !== 'events') throw new QueryError('Query must only SELECT FROM events');
  if (q.joins.length) throw new QueryError('JOINs are not supported');
  if (q.groupBy.length || q.having || q.orderBy.length || q.limit || q.offset || q.distinct || q.windows)
    throw new QueryError('Unsupported HogQL query: only fields and a WHERE clause are supported');
  if (q.columns.length > MAX_FIELDS) throw new QueryError(`Unsupported HogQL query: at most ${MAX_FIELDS} fields`);
  const seen = new Set<string>();
  const fields = q.columns.map((c): Field => {
    if (c.expr.k === 'star') throw new QueryError('Unsupported HogQL query: select the fields to export instead of *');
    refuseAggregates(c.expr);
    const alias = c.alias ?? defaultAlias(c.expr);
    if (seen.has(alias))
      throw new QueryError(`Invalid HogQL query: the field name "${alias}" is used twice; give one an alias`);
    seen.add(alias);
    return { expr: c.expr, alias };
  });
  if (q.where) refuseAggregates(q.where);
  return { select: q, fields };
}

/** The type a receiving table gives a field's column. */
function columnType(t: Typed, json: boolean): ExportColumn['type'] {
  if (json || typeof t.constant === 'number') return 'jsonb';
  switch (t.type) {
    case 'DateTime':
      return 'timestamptz';
    case 'Int':
      return 'bigint';
    case 'Bool':
      return 'boolean';
    case 'Float':
    case 'Object':
    case 'Array':
    case 'Json':
      return 'jsonb';
    default:
      return 'text';
  }
}

export interface CompiledExport {
  /** Each field's alias with its JSON value. */
  pairs: [string, SQL][];
  columns: ExportColumn[];
  where: SQL | null;
  /** Columns that identify a record: `uuid` when the query exports the event's uuid under that name. */
  key: string[] | null;
}

/**
 * The fields and condition in the project's timezone (where days begin, where text without an offset is read).
 * A date-time is exported as its instant in UTC, as the default fields' `timestamp` is, unless the query
 * names a zone (toTimeZone).
 */
function compileFields(select: Select, fields: Field[], teamId: number, timezone?: string): CompiledExport {
  // The records' SQL always joins the event's person.
  const table = eventsTable();
  const opts = { teamId, timezone };
  const pairs: [string, SQL][] = [];
  const columns: ExportColumn[] = [];
  for (const f of fields) {
    const t = compileExpression(f.expr, table, opts);
    const json = f.expr.k === 'field' && t.type === 'Prop';
    pairs.push([f.alias, jsonValue(f.expr, t)]);
    columns.push({ name: f.alias, type: columnType(t, json) });
  }
  const where = select.where ? toBool(compileExpression(select.where, table, opts), select.where.pos).sql : null;
  const uuid = fields.find((f) => f.alias === 'uuid');
  const isUuid = uuid?.expr.k === 'field' && uuid.expr.chain.join('.').replace(/^events\./, '') === 'uuid';
  return { pairs, columns, where, key: isUuid ? ['uuid'] : null };
}

/** The read-only `schema` an export's `hogql_query` compiles to, or a 400 on `hogql_query`. */
export async function compileHogQL(query: string): Promise<Record<string, unknown>> {
  try {
    const { select, fields } = await parseExport(query);
    // Compiled once here (for no project: nothing runs) so that what the compiler refuses is refused when saved.
    try {
      compileFields(select, fields, 0);
    } catch (err) {
      if (err instanceof QueryError) throw new QueryError(`Invalid HogQL query: ${err.message}`);
      throw err;
    }
    return {
      fields: fields.map((f) => ({ expression: print(f.expr), alias: f.alias })),
      values: {},
      hogql_query: printSelect(select),
    };
  } catch (err) {
    if (err instanceof QueryError) throw ApiError.validation('hogql_query', err.message);
    throw err;
  }
}

/** An export's query compiled for a run (a QueryError, which fails the run for good, if it no longer compiles). */
export async function compileExport(query: string, teamId: number, timezone?: string): Promise<CompiledExport> {
  const { select, fields } = await parseExport(query);
  return compileFields(select, fields, teamId, timezone);
}
