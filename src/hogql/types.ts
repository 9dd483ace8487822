import { sql, type SQL } from 'drizzle-orm';
import { dateValue } from '../core/dates.js';
import type { Scalar } from './ast.js';
import { QueryError } from './errors.js';

/**
 * What a compiled expression holds. `Prop` is a property read out of JSON as text, whose real type is
 * unknown until it is compared or computed with: then it is read as a number, a date or text.
 */
export type Type =
  | 'String'
  | 'Prop'
  | 'Int'
  | 'Float'
  | 'Bool'
  | 'DateTime'
  | 'Date'
  | 'UUID'
  | 'Object'
  | 'Null'
  | 'Interval'
  | 'Json'
  | 'Array';

export interface Typed {
  sql: SQL;
  type: Type;
  /** The value, when the expression is a constant (it is then a bound parameter). */
  constant?: Scalar;
  /** The ClickHouse type PostHog would report, where it differs from the type's usual one. */
  ch?: string;
  /** An array's element type. */
  elem?: Type;
  /** A date-time's time zone, set by toTimeZone(): where its days begin and how it is written. */
  tz?: string;
  /** A property read from JSON: the value with its JSON type (a number stays a number), for exported values. */
  json?: SQL;
}

const CH: Record<Type, string> = {
  String: 'String',
  Prop: 'Nullable(String)',
  Int: 'Int64',
  Float: 'Float64',
  Bool: 'Bool',
  DateTime: "DateTime64(6, 'UTC')",
  Date: 'Date',
  UUID: 'UUID',
  Object: 'String',
  Null: 'Nullable(Nothing)',
  Interval: 'String',
  Json: 'JSON',
  Array: 'Array',
};

export const clickhouseType = (t: Typed): string =>
  t.ch ??
  (t.type === 'Array'
    ? `Array(${CH[t.elem ?? 'String']})`
    : t.type === 'DateTime' && t.tz
      ? `DateTime64(6, '${t.tz}')`
      : CH[t.type]);

/** A number as text: the only property values read as numbers (anything else is NULL, never an error). */
export const NUMERIC_TEXT = '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]{1,3})?\\s*$';
const ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';

export function constant(value: Scalar, at?: number): Typed {
  if (value === null) return { sql: sql`null`, type: 'Null', constant: null };
  if (typeof value === 'boolean') return { sql: sql.raw(value ? 'true' : 'false'), type: 'Bool', constant: value };
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new QueryError(`Number out of range: ${value}`, at);
    if (Number.isSafeInteger(value)) return { sql: sql`${String(value)}::bigint`, type: 'Int', constant: value };
    return { sql: sql`${String(value)}::numeric`, type: 'Float', constant: value };
  }
  if (value.includes('\0')) throw new QueryError('Strings may not contain NUL characters', at);
  return { sql: sql`${value}::text`, type: 'String', constant: value };
}

const isNumeric = (t: Type) => t === 'Int' || t === 'Float';
const describe = (t: Typed) =>
  t.constant !== undefined ? JSON.stringify(t.constant) : `a value of type ${clickhouseType(t)}`;

export function toNumber(e: Typed, at?: number): Typed {
  if (isNumeric(e.type) || e.type === 'Null') return e;
  if (e.type === 'Bool') return { sql: sql`(${e.sql})::int`, type: 'Int' };
  if (e.type === 'String' || e.type === 'Prop') {
    if (typeof e.constant === 'string') {
      const n = Number(e.constant);
      if (e.constant.trim() === '' || !Number.isFinite(n))
        throw new QueryError(`Cannot convert ${JSON.stringify(e.constant)} to a number`, at);
      return constant(n, at);
    }
    return { sql: sql`(case when ${e.sql} ~ ${NUMERIC_TEXT} then (${e.sql})::numeric end)`, type: 'Float' };
  }
  throw new QueryError(`Expected a number, got ${describe(e)}`, at);
}

/** A date, or a date-time without an offset or zone (`2024-03-10`, `2024-03-10 00:00:00`): a wall-clock time. */
const NAIVE = /^\s*\d{4}-\d{2}-\d{2}([T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*$/;
/** The same pattern, for PostgreSQL's regular expressions. */
const NAIVE_SQL = NAIVE.source;

/**
 * A date-time. Text without an offset is a wall-clock time in `zone` (UTC when none): ClickHouse reads a
 * string compared with a DateTime in that DateTime's zone, and PostHog's date-time columns are in the
 * team's. Text with an offset or `Z` keeps it.
 */
export function toDateTime(e: Typed, at?: number, zone?: string): Typed {
  if (e.type === 'DateTime' || e.type === 'Null') return e;
  const local = zone && zone !== 'UTC' ? zone : undefined;
  if (e.type === 'Date')
    return {
      sql: sql`((${e.sql})::timestamp at time zone ${local ? sql`${local}::text` : sql.raw(`'UTC'`)})`,
      type: 'DateTime',
    };
  if (e.type === 'String' || e.type === 'Prop') {
    if (typeof e.constant === 'string') {
      const iso = dateValue(e.constant);
      if (!iso) throw new QueryError(`Cannot convert ${JSON.stringify(e.constant)} to a date-time`, at);
      // dateValue read a naive text as UTC: its digits are the wall clock, read again in the zone.
      if (local && NAIVE.test(e.constant))
        return { sql: sql`(${iso.slice(0, -1)}::timestamp at time zone ${local}::text)`, type: 'DateTime' };
      return { sql: sql`${iso}::timestamptz`, type: 'DateTime' };
    }
    if (!local) return { sql: sql`try_timestamptz(${e.sql})`, type: 'DateTime' };
    return {
      sql: sql`(case when ${e.sql} ~ ${NAIVE_SQL}
        then (try_timestamptz(${e.sql}) at time zone 'UTC') at time zone ${local}::text
        else try_timestamptz(${e.sql}) end)`,
      type: 'DateTime',
    };
  }
  throw new QueryError(`Expected a date-time, got ${describe(e)}`, at);
}

/**
 * The zone text and dates meeting these values are read in: the first date-time's own zone (toTimeZone), else
 * `fallback`, the project's.
 */
export const readZone = (xs: Typed[], fallback?: string): string | undefined =>
  xs.find((x) => x.type === 'DateTime' || (x.type === 'Array' && x.elem === 'DateTime'))?.tz ?? fallback;

/** A date-time is answered in the project's timezone unless the query chose one, as PostHog's team timezone. */
export function inZone(t: Typed, zone: string | undefined): Typed {
  if (!zone || zone === 'UTC' || t.tz) return t;
  return t.type === 'DateTime' || (t.type === 'Array' && t.elem === 'DateTime') ? { ...t, tz: zone } : t;
}

/** A date-time's zone as SQL: its own (toTimeZone) or UTC. */
export const zone = (e: Typed, fallback?: string): SQL => {
  const tz = e.tz ?? fallback;
  return tz && tz !== 'UTC' ? sql`${tz}::text` : sql.raw(`'UTC'`);
};

/**
 * A date; a date-time's day is the one of its own zone, else of `tz` (the project's), else UTC, where text
 * without an offset is read too.
 */
export function toDate(e: Typed, at?: number, tz?: string): Typed {
  if (e.type === 'Date' || e.type === 'Null') return e;
  if (typeof e.constant === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(e.constant)) {
    if (!dateValue(e.constant)) throw new QueryError(`Cannot convert ${JSON.stringify(e.constant)} to a date`, at);
    return { sql: sql`${e.constant}::date`, type: 'Date' };
  }
  const dt = toDateTime(e, at, tz);
  return { sql: sql`((${dt.sql}) at time zone ${zone(dt, tz)})::date`, type: 'Date' };
}

export function toText(e: Typed): Typed {
  switch (e.type) {
    case 'String':
    case 'Prop':
      return e;
    case 'Null':
      return { sql: sql`null::text`, type: 'String' };
    case 'DateTime':
      if (e.tz) {
        // In its zone, with the zone's offset (PostHog writes such date-times as `2024-05-01T12:00:00+02:00`).
        const local = sql`((${e.sql}) at time zone ${e.tz}::text)`;
        const off = sql`extract(epoch from ${local} - ((${e.sql}) at time zone 'UTC'))::int`;
        return {
          sql: sql`(to_char(${local}, 'YYYY-MM-DD"T"HH24:MI:SS.US')
            || case when ${off} < 0 then '-' else '+' end || lpad((abs(${off}) / 3600)::text, 2, '0')
            || ':' || lpad((abs(${off}) % 3600 / 60)::text, 2, '0'))`,
          type: 'String',
        };
      }
      return { sql: sql`to_char((${e.sql}) at time zone 'UTC', ${sql.raw(`'${ISO_FORMAT}'`)})`, type: 'String' };
    case 'Date':
      return { sql: sql`to_char(${e.sql}, 'YYYY-MM-DD')`, type: 'String' };
    case 'Bool':
      return { sql: sql`(case when ${e.sql} then 'true' when not ${e.sql} then 'false' end)`, type: 'String' };
    case 'Json':
      throw new QueryError('A whole event or person cannot be used in an expression');
    case 'Array':
      return { sql: sql`(to_json(${e.sql}))::text`, type: 'String' };
    default:
      return { sql: sql`(${e.sql})::text`, type: 'String' };
  }
}

export function toBool(e: Typed, at?: number): Typed {
  if (e.type === 'Bool' || e.type === 'Null') return e;
  if (isNumeric(e.type)) return { sql: sql`((${e.sql}) <> 0)`, type: 'Bool' };
  if (e.type === 'Prop' || e.type === 'String') return { sql: sql`(lower(${e.sql}) in ('true', '1'))`, type: 'Bool' };
  throw new QueryError(`Expected a condition, got ${describe(e)}`, at);
}

/** The type two operands are compared (or combined, as in `if` and `coalesce`) in. */
export function common(types: Type[], at?: number): Type {
  const known = types.filter((t) => t !== 'Null');
  if (!known.length) return 'Null';
  if (known.some((t) => t === 'Json')) throw new QueryError('A whole event or person cannot be compared', at);
  if (known.some((t) => t === 'Array') && !known.every((t) => t === 'Array'))
    throw new QueryError('An array can only be compared with an array', at);
  if (known.every((t) => t === known[0])) return known[0] === 'Prop' ? 'String' : known[0]!;
  if (known.some((t) => t === 'Interval'))
    throw new QueryError('An interval can only be compared with an interval', at);
  if (known.some(isNumeric)) return known.every((t) => t === 'Int' || t === 'Bool') ? 'Int' : 'Float';
  if (known.includes('DateTime')) return 'DateTime';
  if (known.includes('Date')) return 'Date';
  return 'String';
}

/** `e` as a `to`; text and dates becoming date-times or dates are read in `zone` (see toDateTime). */
export function coerce(e: Typed, to: Type, at?: number, zone?: string): Typed {
  if (e.type === to) return e;
  switch (to) {
    case 'Int':
    case 'Float':
      return toNumber(e, at);
    case 'DateTime':
      return toDateTime(e, at, zone);
    case 'Date':
      return toDate(e, at, zone);
    case 'Bool':
      return toBool(e, at);
    case 'String':
      return toText(e);
    default:
      return e;
  }
}

/** A result column as JSON-friendly SQL: date-times as ISO text in UTC, JSON objects as their text (as PostHog). */
export function outputSql(e: Typed): SQL {
  switch (e.type) {
    case 'DateTime':
    case 'Date':
    case 'Bool':
      return e.type === 'Bool' ? e.sql : toText(e).sql;
    case 'Array':
      // Elements as they would be written alone: date-times as ISO text, properties as text.
      if (e.elem === 'DateTime' || e.elem === 'Date')
        return sql`(select coalesce(json_agg(${toText({ sql: sql`x`, type: e.elem, tz: e.tz }).sql} order by i),
          '[]'::json) from unnest(${e.sql}) with ordinality as u(x, i))`;
      return sql`to_json(${e.sql})`;
    case 'Object':
    case 'Interval':
      return sql`(${e.sql})::text`;
    default:
      return e.sql;
  }
}
