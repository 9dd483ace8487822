import { sql, type SQL } from 'drizzle-orm';
import { HogQLError, type Constant, type Expr } from './ast.js';

export type ColumnType = 'text' | 'uuid' | 'timestamp' | 'integer' | 'json';

/** What the names of a query stand for in SQL: each column with its type, and the properties JSON. */
export interface Scope {
  column(name: string): { sql: SQL; type: ColumnType } | undefined;
  properties: SQL;
}

const NUMERIC = '^\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?\\s*$';

function column(scope: Scope, name: string) {
  const c = scope.column(name);
  if (!c) throw new HogQLError(`Invalid HogQL query: Unable to resolve field: ${name}`);
  return c;
}

function path(p: string[]): SQL {
  return sql`${`{${p.map((k) => `"${k.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`}::text[]`;
}

function timestampParam(value: Constant): SQL {
  if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) {
    throw new HogQLError(`Invalid HogQL query: ${JSON.stringify(value)} is not a date-time`);
  }
  return sql`${new Date(value).toISOString()}::timestamptz`;
}

/** An operand as text, the common ground for equality, LIKE and IN. */
function asText(e: Expr, scope: Scope): SQL {
  if (e.kind === 'constant') return e.value === null ? sql`null::text` : sql`${String(e.value)}::text`;
  if (e.kind === 'property') return sql`(${scope.properties} #>> ${path(e.path)})`;
  if (e.kind === 'field') {
    const c = column(scope, e.name);
    if (c.type === 'text') return c.sql;
    if (c.type === 'timestamp') return sql`to_char(${c.sql} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
    return sql`(${c.sql})::text`;
  }
  throw new HogQLError('Unsupported HogQL query');
}

/** A property as a number where it holds one (a JSON number or a numeric string), else NULL. */
function propertyNumber(p: string[], scope: Scope): SQL {
  const text = sql`(${scope.properties} #>> ${path(p)})`;
  return sql`(case when ${text} ~ ${NUMERIC} then ${text}::numeric end)`;
}

function compareOp(op: string): SQL {
  return sql.raw(op);
}

function comparison(op: string, left: Expr, right: Expr, scope: Scope): SQL {
  // Put a constant on the right so typing only looks one way.
  if (left.kind === 'constant' && right.kind !== 'constant') {
    const flipped: Record<string, string> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
    if (!op.includes('LIKE')) return comparison(flipped[op] ?? op, right, left, scope);
  }
  if (op.includes('LIKE')) return sql`${asText(left, scope)} ${compareOp(op)} ${asText(right, scope)}`;
  if (right.kind === 'constant') {
    const v = right.value;
    if (left.kind === 'field') {
      const c = column(scope, left.name);
      if (c.type === 'timestamp') return sql`${c.sql} ${compareOp(op)} ${timestampParam(v)}`;
      if (c.type === 'integer' && typeof v === 'number') return sql`${c.sql} ${compareOp(op)} ${v}`;
      if (c.type === 'json') return sql`${c.sql} ${compareOp(op)} ${JSON.stringify(v)}::jsonb`;
    }
    if (left.kind === 'property' && typeof v === 'number') {
      return sql`${propertyNumber(left.path, scope)} ${compareOp(op)} ${v}`;
    }
  }
  return sql`${asText(left, scope)} ${compareOp(op)} ${asText(right, scope)}`;
}

/** Compiles a condition to a parameterised SQL boolean; NULLs compare as in SQL (unknown is false). */
export function compileCondition(e: Expr, scope: Scope): SQL {
  switch (e.kind) {
    case 'compare':
      return sql`(${comparison(e.op, e.left, e.right, scope)})`;
    case 'in': {
      const values = sql.join(
        e.values.map((v) => asText(v, scope)),
        sql`, `,
      );
      return sql`(${asText(e.left, scope)} ${sql.raw(e.negated ? 'not in' : 'in')} (${values}))`;
    }
    case 'isNull':
      return sql`(${asText(e.expr, scope)} ${sql.raw(e.negated ? 'is not null' : 'is null')})`;
    case 'and':
    case 'or':
      return sql`(${sql.join(
        e.exprs.map((x) => compileCondition(x, scope)),
        sql.raw(e.kind === 'and' ? ' and ' : ' or '),
      )})`;
    case 'not':
      return sql`(not coalesce(${compileCondition(e.expr, scope)}, false))`;
    default:
      throw new HogQLError('Unsupported HogQL query: not a condition');
  }
}

/**
 * Compiles a value to SQL of type json, so a row serialises the same on every driver: timestamps as
 * ISO strings in UTC, properties with their JSON types kept.
 */
export function compileJsonValue(e: Expr, scope: Scope): SQL {
  switch (e.kind) {
    case 'constant':
      return sql`${JSON.stringify(e.value)}::json`;
    case 'property':
      return sql`(${scope.properties} #> ${path(e.path)})::json`;
    case 'field': {
      const c = column(scope, e.name);
      if (c.type === 'json') return sql`(${c.sql})::json`;
      if (c.type === 'integer') return sql`to_json(${c.sql})`;
      return sql`to_json(${asText(e, scope)})`;
    }
    default:
      throw new HogQLError('Unsupported HogQL query: not a value');
  }
}

/** The SQL type a field's values take in a table created to receive them. */
export function valueType(e: Expr, scope: Scope): ColumnType {
  if (e.kind === 'property') return 'json';
  if (e.kind === 'constant') return typeof e.value === 'number' ? 'json' : 'text';
  if (e.kind === 'field') return column(scope, e.name).type;
  return 'json';
}
