import { sql, type SQL } from 'drizzle-orm';
import type { Node } from './ast.js';
import { QueryError } from './errors.js';
import { INTERVAL_UNITS } from './units.js';
import { property } from './tables.js';
import {
  coerce,
  common,
  readZone,
  toBool,
  toDate,
  toDateTime,
  toNumber,
  toText,
  zone,
  type Type,
  type Typed,
} from './types.js';

type Call = Extract<Node, { k: 'call' }>;

interface Fn {
  /** Argument counts allowed, [min, max]. */
  arity: [number, number];
  /** Takes parameters before its arguments, as `quantile(0.9)(x)`. */
  params?: boolean;
  /** `session`: the statement's own TimeZone setting, when it has one (see CompileOptions.sessionTimezone). */
  run(args: Typed[], call: Call, tz: string, session?: string): Typed;
}

const join = (parts: SQL[]) => sql.join(parts, sql`, `);

function numeric(f: (x: Typed) => Typed): Fn {
  return { arity: [1, 1], run: ([x], c) => f(toNumber(x!, c.pos)) };
}

/** The level of `quantile(level)(x)`: one constant number from 0 to 1. */
function levelOf(c: Call): number {
  const [p, ...more] = c.params ?? [];
  const level = p?.k === 'const' && typeof p.value === 'number' ? p.value : p?.k === 'neg' ? -1 : Number.NaN;
  if (more.length || !(level >= 0 && level <= 1))
    throw new QueryError(`${c.name}() takes one level from 0 to 1: ${c.name}(0.9)(x)`, c.pos);
  return level;
}

/** ClickHouse's quantile(level)(x) (and median), as PostgreSQL's continuous percentile: NULLs are skipped. */
function quantile(fixed?: number): Fn {
  return {
    arity: [1, 1],
    params: fixed === undefined,
    run([x], c) {
      const level = fixed ?? levelOf(c);
      const v = toNumber(x!, c.pos).sql;
      return {
        sql: sql`percentile_cont(${sql.raw(String(level))}::float8) within group (order by (${v})::float8)`,
        type: 'Float',
      };
    },
  };
}

/** Whether a date-time's zone (its own, else the project's) is the statement's TimeZone setting. */
const inSession = (dt: Typed, tz: string, session: string | undefined) =>
  session !== undefined && (dt.tz ?? tz ?? 'UTC') === session;

function truncate(unit: 'minute' | 'hour' | 'day' | 'month' | 'quarter' | 'year', asDate: boolean): Fn {
  return {
    arity: [1, 1],
    run([x], c, tz, session) {
      const dt = toDateTime(x!, c.pos, tz);
      const u = sql.raw(`'${unit}'`);
      // In the statement's own zone, PostgreSQL cuts without looking the zone up by name for every row (twice
      // as fast over many events).
      if (inSession(dt, tz, session)) {
        const t = sql`date_trunc(${u}, ${dt.sql})`;
        return asDate ? { sql: sql`(${t})::date`, type: 'Date' } : { sql: t, type: 'DateTime', tz: dt.tz };
      }
      const z = zone(dt, tz);
      const t = sql`date_trunc(${u}, ${dt.sql}, ${z})`;
      return asDate
        ? { sql: sql`((${t}) at time zone ${z})::date`, type: 'Date' }
        : { sql: t, type: 'DateTime', tz: dt.tz };
    },
  };
}

function part(field: 'year' | 'month' | 'day' | 'hour' | 'minute' | 'isodow'): Fn {
  return {
    arity: [1, 1],
    run: ([x], c, tz) => {
      const dt = toDateTime(x!, c.pos, tz);
      return { sql: sql`extract(${sql.raw(field)} from (${dt.sql}) at time zone ${zone(dt, tz)})::int`, type: 'Int' };
    },
  };
}

/** `interval n unit`: the unit comes from a fixed list, never from the query's text. */
export function interval(n: Typed, unit: string, at?: number): Typed {
  const u = unit.toLowerCase();
  if (!(INTERVAL_UNITS as readonly string[]).includes(u)) throw new QueryError(`Unknown interval unit ${unit}`, at);
  const one = u === 'quarter' ? "'3 months'" : `'1 ${u}'`;
  return { sql: sql`((${toNumber(n, at).sql})::float8 * interval ${sql.raw(one)})`, type: 'Interval' };
}

function jsonExtract(kind: 'String' | 'Int' | 'Float' | 'Bool' | 'Raw' | 'Has'): Fn {
  return {
    arity: [2, 16],
    run([doc, ...keys], c) {
      if (doc!.type !== 'Object')
        throw new QueryError(`${c.name}() reads a JSON column: properties or person.properties`, c.pos);
      const path = keys.map((k) => {
        if (typeof k.constant !== 'string' && typeof k.constant !== 'number')
          throw new QueryError(`${c.name}() takes constant keys`, c.pos);
        return String(k.constant);
      });
      const text = property(doc!.sql, path);
      if (kind === 'Has') {
        let node = doc!.sql;
        for (const k of path) node = sql`(${node} -> ${k}::text)`;
        return { sql: sql`(${node} is not null)`, type: 'Bool' };
      }
      if (kind === 'String' || kind === 'Raw') return { sql: sql`coalesce(${text.sql}, '')`, type: 'String' };
      if (kind === 'Bool') return { sql: sql`coalesce(${toBool(text).sql}, false)`, type: 'Bool' };
      const n = toNumber(text);
      return kind === 'Int'
        ? { sql: sql`coalesce(trunc(${n.sql}), 0)`, type: 'Int' }
        : { sql: sql`coalesce(${n.sql}, 0)`, type: 'Float' };
    },
  };
}

function minMax(fn: 'min' | 'max'): Fn {
  return {
    arity: [1, 1],
    run([x], c) {
      const t = x!.type;
      if (t === 'Bool') return { sql: sql`${sql.raw(fn === 'min' ? 'bool_and' : 'bool_or')}(${x!.sql})`, type: 'Bool' };
      if (t === 'Object' || t === 'Json') throw new QueryError(`${c.name}() cannot compare JSON objects`, c.pos);
      const arg = t === 'UUID' || t === 'Prop' ? toText(x!) : x!;
      return { sql: sql`${sql.raw(fn)}(${arg.sql})`, type: arg.type === 'Prop' ? 'String' : arg.type };
    },
  };
}

/** Values in the type they share (`if`, `coalesce`, ...): text meeting a date-time is read in its zone. */
function combine(args: Typed[], at: number, tz: string): Typed[] {
  const type = common(
    args.map((a) => a.type),
    at,
  );
  const zone = readZone(args, tz);
  return args.map((a) => coerce(a, type === 'Null' ? 'String' : type, at, zone));
}

const INTERVAL_FUNCTIONS = Object.fromEntries(
  INTERVAL_UNITS.map((u): [string, Fn] => [
    `tointerval${u}`,
    { arity: [1, 1], run: ([n], c) => interval(n!, u, c.pos) },
  ]),
);

/** PostgreSQL's name of an array's element type, for an empty array of it. */
export function pgType(t: Type, at?: number): string {
  const names: Partial<Record<Type, string>> = {
    Int: 'bigint',
    Float: 'numeric',
    String: 'text',
    Prop: 'text',
    Null: 'text',
    Bool: 'boolean',
    DateTime: 'timestamptz',
    Date: 'date',
    UUID: 'uuid',
  };
  const name = names[t];
  if (!name) throw new QueryError(`Arrays of ${t === 'Array' ? 'arrays' : t} are not supported`, at);
  return name;
}

/** `[a, b, ...]`: its elements in the type they share. */
export function arrayOf(items: Typed[], at: number, zone?: string): Typed {
  const t = common(
    items.map((i) => i.type),
    at,
  );
  const elem: Type = t === 'Null' || t === 'Prop' ? 'String' : t;
  const pg = pgType(elem, at);
  if (!items.length) return { sql: sql.raw(`array[]::${pg}[]`), type: 'Array', elem };
  return {
    sql: sql`array[${join(items.map((i) => coerce(i, elem, at, zone).sql))}]::${sql.raw(pg)}[]`,
    type: 'Array',
    elem,
  };
}

/** Functions that only run over a window. */
export const WINDOW_ONLY = new Set([
  'row_number',
  'rank',
  'dense_rank',
  'percent_rank',
  'cume_dist',
  'ntile',
  'lag',
  'lead',
  'laginframe',
  'leadinframe',
  'first_value',
  'last_value',
  'nth_value',
]);
/** Aggregates that may also run over a window. */
export const WINDOW_AGGREGATES = new Set([
  'count',
  'countif',
  'sum',
  'avg',
  'min',
  'max',
  'sumif',
  'avgif',
  'minif',
  'maxif',
]);

/** Aggregates that take ClickHouse's `-If` combinator (`sumIf(x, cond)`): one aggregate call each, filtered. */
const IF_COMBINABLE = new Set(['sum', 'avg', 'min', 'max', 'uniq', 'quantile', 'median']);

function constantText(x: Typed | undefined, what: string, c: Call): string {
  if (typeof x?.constant !== 'string') throw new QueryError(`${c.name}() takes ${what} as a constant string`, c.pos);
  return x.constant;
}

const DIFF_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'] as const;

function unitOf(x: Typed | undefined, c: Call): (typeof DIFF_UNITS)[number] {
  const u = constantText(x, 'its unit', c).toLowerCase().replace(/s$/, '');
  if (!(DIFF_UNITS as readonly string[]).includes(u))
    throw new QueryError(`${c.name}() takes a unit of: ${DIFF_UNITS.join(', ')}`, c.pos);
  return u as (typeof DIFF_UNITS)[number];
}

/**
 * replaceRegexpAll/One. ClickHouse's replacement names the whole match `\\0`, PostgreSQL's `\\&`: a constant
 * replacement (the usual case) is rewritten; any other is passed as it is.
 */
function replaceRegexp(all: boolean): Fn {
  return {
    arity: [3, 3],
    run([s, re, to]) {
      const constant = typeof to!.constant === 'string';
      const replacement = constant
        ? sql`${(to!.constant as string).replace(/\\(\\|0)/g, (m, c) => (c === '0' ? '\\&' : m))}::text`
        : toText(to!).sql;
      const flags = all ? sql`, 'g'` : sql``;
      return {
        sql: sql`regexp_replace(${toText(s!).sql}, ${toText(re!).sql}, ${replacement}${flags})`,
        type: 'String',
      };
    },
  };
}

/** The functions beyond the first set: windows, arrays, dates, strings. */
function MORE_FUNCTIONS(): Record<string, Fn> {
  const same = (t: Typed): Type => (t.type === 'Prop' ? 'String' : t.type);
  const offset = (n: Typed | undefined, c: Call) => (n ? sql`(${toNumber(n, c.pos).sql})::int` : sql.raw('1'));
  const shift = (fn: 'lag' | 'lead'): Fn => ({
    arity: [1, 3],
    run([x, n, dflt], c, tz) {
      const t = same(x!);
      const v = coerce(x!, t, c.pos);
      const d = dflt ? sql`, ${coerce(dflt, t, c.pos, readZone([x!], tz)).sql}` : sql``;
      return { sql: sql`${sql.raw(fn)}(${v.sql}, ${offset(n, c)}${d})`, type: t, tz: x!.tz, elem: x!.elem };
    },
  });
  const rank = (fn: string, ch = 'UInt64'): Fn => ({
    arity: [0, 0],
    run: () => ({ sql: sql.raw(`${fn}()`), type: 'Int', ch }),
  });
  const value = (fn: string): Fn => ({
    arity: [1, 1],
    run: ([x]) => ({ sql: sql`${sql.raw(fn)}(${x!.sql})`, type: same(x!), tz: x!.tz, elem: x!.elem }),
  });
  const diff = (u: (typeof DIFF_UNITS)[number], a: Typed, b: Typed, tz: string): SQL => {
    const epoch = (x: Typed) => sql`extract(epoch from ${x.sql})`;
    const local = (x: Typed) => sql`((${x.sql}) at time zone ${zone(x, tz)})`;
    const months = (x: Typed) => sql`(extract(year from ${local(x)}) * 12 + extract(month from ${local(x)}))`;
    const quarters = (x: Typed) => sql`(extract(year from ${local(x)}) * 4 + extract(quarter from ${local(x)}))`;
    switch (u) {
      case 'second':
        return sql`(floor(${epoch(b)}) - floor(${epoch(a)}))`;
      case 'minute':
        return sql`(floor(${epoch(b)} / 60) - floor(${epoch(a)} / 60))`;
      case 'hour':
        return sql`(floor(${epoch(b)} / 3600) - floor(${epoch(a)} / 3600))`;
      case 'day':
        return sql`(${local(b)}::date - ${local(a)}::date)`;
      case 'week':
        return sql`((date_trunc('week', ${local(b)})::date - date_trunc('week', ${local(a)})::date) / 7)`;
      case 'month':
        return sql`(${months(b)} - ${months(a)})`;
      case 'quarter':
        return sql`(${quarters(b)} - ${quarters(a)})`;
      case 'year':
        return sql`(extract(year from ${local(b)}) - extract(year from ${local(a)}))`;
    }
  };
  const add = (sign: '+' | '-'): Fn => ({
    arity: [2, 3],
    run(args, c, tz) {
      // dateAdd('day', 1, d) as PostHog documents it, or dateAdd(d, INTERVAL 1 DAY).
      if (args.length === 2) {
        const [d, i] = args;
        if (i!.type !== 'Interval') throw new QueryError(`${c.name}(date, interval) takes an INTERVAL`, c.pos);
        const dt = toDateTime(d!, c.pos, tz);
        return { sql: sql`(${dt.sql} ${sql.raw(sign)} ${i!.sql})`, type: 'DateTime', tz: dt.tz };
      }
      const [u, n, d] = args;
      const dt = toDateTime(d!, c.pos, tz);
      const step = interval(n!, unitOf(u, c), c.pos);
      return { sql: sql`(${dt.sql} ${sql.raw(sign)} ${step.sql})`, type: 'DateTime', tz: dt.tz };
    },
  });
  const likeFn = (op: string): Fn => ({
    arity: [2, 2],
    run: ([a, b]) => ({ sql: sql`(${toText(a!).sql} ${sql.raw(op)} ${toText(b!).sql})`, type: 'Bool' }),
  });
  return {
    row_number: rank('row_number'),
    rank: rank('rank'),
    dense_rank: rank('dense_rank'),
    percent_rank: { arity: [0, 0], run: () => ({ sql: sql.raw('percent_rank()'), type: 'Float' }) },
    cume_dist: { arity: [0, 0], run: () => ({ sql: sql.raw('cume_dist()'), type: 'Float' }) },
    ntile: {
      arity: [1, 1],
      run: ([n], c) => ({ sql: sql`ntile((${toNumber(n!, c.pos).sql})::int)`, type: 'Int', ch: 'UInt64' }),
    },
    lag: shift('lag'),
    lead: shift('lead'),
    laginframe: shift('lag'),
    leadinframe: shift('lead'),
    first_value: value('first_value'),
    last_value: value('last_value'),
    nth_value: {
      arity: [2, 2],
      run: ([x, n], c) => ({
        sql: sql`nth_value(${x!.sql}, (${toNumber(n!, c.pos).sql})::int)`,
        type: same(x!),
        tz: x!.tz,
        elem: x!.elem,
      }),
    },
    arraysort: {
      arity: [1, 1],
      run([arr], c) {
        if (arr!.type !== 'Array') throw new QueryError('arraySort() takes an array (or a lambda and arrays)', c.pos);
        // ClickHouse sorts NULLs last, as PostgreSQL's ascending order does.
        return { ...arr!, sql: sql`array(select x from unnest(${arr!.sql}) as x order by x)`, constant: undefined };
      },
    },
    tounixtimestamp: {
      arity: [1, 2],
      run: ([x], c, tz) => ({
        sql: sql`floor(extract(epoch from ${toDateTime(x!, c.pos, tz).sql}))::bigint`,
        type: 'Int',
        ch: 'UInt32',
      }),
    },
    tounixtimestamp64micro: {
      arity: [1, 2],
      run: ([x], c, tz) => ({
        sql: sql`(extract(epoch from ${toDateTime(x!, c.pos, tz).sql}) * 1000000)::bigint`,
        type: 'Int',
        ch: 'Int64',
      }),
    },
    has: {
      arity: [2, 2],
      run([arr, x], c, tz) {
        if (arr!.type !== 'Array') throw new QueryError('has() takes an array first', c.pos);
        const v = coerce(x!, arr!.elem ?? 'String', c.pos, readZone([arr!], tz));
        return { sql: sql`coalesce((${v.sql}) = any(${arr!.sql}), false)`, type: 'Bool' };
      },
    },
    splitbychar: {
      arity: [2, 2],
      run: ([sep, s]) => ({
        sql: sql`string_to_array(${toText(s!).sql}, ${toText(sep!).sql})`,
        type: 'Array',
        elem: 'String',
      }),
    },
    splitbystring: {
      arity: [2, 2],
      run: ([sep, s]) => ({
        sql: sql`string_to_array(${toText(s!).sql}, ${toText(sep!).sql})`,
        type: 'Array',
        elem: 'String',
      }),
    },
    arraystringconcat: {
      arity: [1, 2],
      run([arr, sep], c) {
        if (arr!.type !== 'Array') throw new QueryError('arrayStringConcat() takes an array', c.pos);
        return {
          sql: sql`array_to_string((${arr!.sql})::text[], ${sep ? toText(sep).sql : sql.raw("''")})`,
          type: 'String',
        };
      },
    },
    nullif: {
      arity: [2, 2],
      run: (args, c, tz) => {
        const [a, b] = combine(args, c.pos, tz);
        return { sql: sql`nullif(${a!.sql}, ${b!.sql})`, type: a!.type, tz: args[0]!.tz };
      },
    },
    datediff: {
      arity: [3, 4],
      run([u, a, b], c, tz) {
        const unit = unitOf(u, c);
        return {
          sql: sql`(${diff(unit, toDateTime(a!, c.pos, tz), toDateTime(b!, c.pos, tz), tz)})::bigint`,
          type: 'Int',
        };
      },
    },
    dateadd: add('+'),
    date_add: add('+'),
    datesub: add('-'),
    date_sub: add('-'),
    totimezone: {
      arity: [2, 2],
      run([x, z], c, tz) {
        const name = constantText(z, 'a time zone name', c);
        try {
          new Intl.DateTimeFormat('en', { timeZone: name });
        } catch {
          throw new QueryError(`Unknown time zone: ${name}`, c.pos);
        }
        return { ...toDateTime(x!, c.pos, tz), tz: name };
      },
    },
    extract: {
      arity: [2, 2],
      run: ([s, re]) => ({
        sql: sql`coalesce(substring(${toText(s!).sql} from ${toText(re!).sql}), '')`,
        type: 'String',
      }),
    },
    replaceregexpall: replaceRegexp(true),
    replaceregexpone: replaceRegexp(false),
    replaceall: {
      arity: [3, 3],
      run: ([s, a, b]) => ({
        sql: sql`replace(${toText(s!).sql}, ${toText(a!).sql}, ${toText(b!).sql})`,
        type: 'String',
      }),
    },
    like: likeFn('like'),
    ilike: likeFn('ilike'),
    notlike: likeFn('not like'),
    notilike: likeFn('not ilike'),
    startswith: {
      arity: [2, 2],
      run: ([s, p]) => ({ sql: sql`starts_with(${toText(s!).sql}, ${toText(p!).sql})`, type: 'Bool' }),
    },
    endswith: {
      arity: [2, 2],
      run: ([s, p]) => ({
        sql: sql`(right(${toText(s!).sql}, length(${toText(p!).sql})) = ${toText(p!).sql})`,
        type: 'Bool',
      }),
    },
    empty: {
      arity: [1, 1],
      run: ([x]) =>
        x!.type === 'Array'
          ? { sql: sql`(coalesce(cardinality(${x!.sql}), 0) = 0)`, type: 'Bool' }
          : { sql: sql`(coalesce(${toText(x!).sql}, '') = '')`, type: 'Bool' },
    },
    notempty: {
      arity: [1, 1],
      run: ([x]) =>
        x!.type === 'Array'
          ? { sql: sql`(coalesce(cardinality(${x!.sql}), 0) > 0)`, type: 'Bool' }
          : { sql: sql`(coalesce(${toText(x!).sql}, '') <> '')`, type: 'Bool' },
    },
  };
}

/** The functions a query may call, by lower-case name; nothing else reaches the SQL. */
const FUNCTIONS: Record<string, Fn> = {
  count: {
    arity: [0, 1],
    run: (args, c) => ({
      sql: args.length ? sql`count(${c.distinct ? sql`distinct ` : sql``}${args[0]!.sql})` : sql`count(*)`,
      type: 'Int',
      ch: 'UInt64',
    }),
  },
  countif: {
    arity: [1, 1],
    run: ([x], c) => ({ sql: sql`count(*) filter (where ${toBool(x!, c.pos).sql})`, type: 'Int', ch: 'UInt64' }),
  },
  uniq: { arity: [1, 1], run: ([x]) => ({ sql: sql`count(distinct ${x!.sql})`, type: 'Int', ch: 'UInt64' }) },
  uniqexact: { arity: [1, 1], run: ([x]) => ({ sql: sql`count(distinct ${x!.sql})`, type: 'Int', ch: 'UInt64' }) },
  sum: numeric((x) => ({ sql: sql`sum(${x.sql})`, type: x.type === 'Int' ? 'Int' : 'Float' })),
  quantile: quantile(),
  median: quantile(0.5),
  avg: numeric((x) => ({ sql: sql`avg(${x.sql})`, type: 'Float' })),
  min: minMax('min'),
  max: minMax('max'),
  todate: { arity: [1, 1], run: ([x], c, tz) => toDate(x!, c.pos, tz) },
  todatetime: { arity: [1, 1], run: ([x], c, tz) => toDateTime(x!, c.pos, tz) },
  tostring: { arity: [1, 1], run: ([x]) => toText(x!) },
  toint: numeric((x) => ({ sql: sql`trunc(${x.sql})`, type: 'Int' })),
  tofloat: numeric((x) => ({ sql: x.sql, type: 'Float' })),
  tostartofminute: truncate('minute', false),
  tostartofhour: truncate('hour', false),
  tostartofday: truncate('day', false),
  tostartofmonth: truncate('month', true),
  tostartofquarter: truncate('quarter', true),
  tostartofyear: truncate('year', true),
  // ClickHouse's default week starts on Sunday; PostgreSQL's on Monday.
  tostartofweek: {
    arity: [1, 2],
    run([x, mode], c, tz, session) {
      const monday = mode !== undefined && typeof mode.constant === 'number' && mode.constant % 2 === 1;
      const dt = toDateTime(x!, c.pos, tz);
      if (inSession(dt, tz, session)) {
        const start = monday
          ? sql`date_trunc('week', ${dt.sql})`
          : sql`(date_trunc('week', (${dt.sql}) + interval '1 day') - interval '1 day')`;
        return { sql: sql`(${start})::date`, type: 'Date' };
      }
      const z = zone(dt, tz);
      const start = monday
        ? sql`date_trunc('week', ${dt.sql}, ${z})`
        : sql`(date_trunc('week', (${dt.sql}) + interval '1 day', ${z}) - interval '1 day')`;
      return { sql: sql`((${start}) at time zone ${z})::date`, type: 'Date' };
    },
  },
  toyear: part('year'),
  tomonth: part('month'),
  todayofmonth: part('day'),
  tohour: part('hour'),
  tominute: part('minute'),
  todayofweek: part('isodow'),
  now: { arity: [0, 0], run: () => ({ sql: sql`now()`, type: 'DateTime' }) },
  current_timestamp: { arity: [0, 0], run: () => ({ sql: sql`now()`, type: 'DateTime' }) },
  // PostHog's mapping leaves these three unaware of the team's zone: ClickHouse answers the server's (UTC) date.
  today: { arity: [0, 0], run: () => ({ sql: sql`(now() at time zone 'UTC')::date`, type: 'Date' }) },
  current_date: { arity: [0, 0], run: () => ({ sql: sql`(now() at time zone 'UTC')::date`, type: 'Date' }) },
  yesterday: { arity: [0, 0], run: () => ({ sql: sql`((now() at time zone 'UTC')::date - 1)`, type: 'Date' }) },
  if: {
    arity: [3, 3],
    run([cond, a, b], c, tz) {
      const [x, y] = combine([a!, b!], c.pos, tz);
      return { sql: sql`(case when ${toBool(cond!, c.pos).sql} then ${x!.sql} else ${y!.sql} end)`, type: x!.type };
    },
  },
  multiif: {
    arity: [3, 63],
    run(args, c, tz) {
      if (args.length % 2 === 0)
        throw new QueryError('multiIf() takes pairs of condition and value, then a default', c.pos);
      const values = combine(
        args.filter((_, i) => i % 2 === 1 || i === args.length - 1),
        c.pos,
        tz,
      );
      const branches: SQL[] = [];
      for (let i = 0; i + 1 < args.length; i += 2)
        branches.push(sql`when ${toBool(args[i]!, c.pos).sql} then ${values[i / 2]!.sql}`);
      return {
        sql: sql`(case ${sql.join(branches, sql` `)} else ${values[values.length - 1]!.sql} end)`,
        type: values[0]!.type,
      };
    },
  },
  coalesce: {
    arity: [1, 32],
    run: (args, c, tz) => {
      const xs = combine(args, c.pos, tz);
      return { sql: sql`coalesce(${join(xs.map((x) => x.sql))})`, type: xs[0]!.type };
    },
  },
  ifnull: {
    arity: [2, 2],
    run: (args, c, tz) => {
      const xs = combine(args, c.pos, tz);
      return { sql: sql`coalesce(${join(xs.map((x) => x.sql))})`, type: xs[0]!.type };
    },
  },
  lower: { arity: [1, 1], run: ([x]) => ({ sql: sql`lower(${toText(x!).sql})`, type: 'String' }) },
  upper: { arity: [1, 1], run: ([x]) => ({ sql: sql`upper(${toText(x!).sql})`, type: 'String' }) },
  length: {
    arity: [1, 1],
    run: ([x]) =>
      x!.type === 'Array'
        ? { sql: sql`coalesce(cardinality(${x!.sql}), 0)`, type: 'Int', ch: 'UInt64' }
        : { sql: sql`length(${toText(x!).sql})`, type: 'Int', ch: 'UInt64' },
  },
  trim: { arity: [1, 1], run: ([x]) => ({ sql: sql`btrim(${toText(x!).sql})`, type: 'String' }) },
  concat: {
    arity: [1, 32],
    run: (args) => ({ sql: sql`concat(${join(args.map((a) => toText(a).sql))})`, type: 'String' }),
  },
  substring: {
    arity: [2, 3],
    run([s, from, len], c) {
      const f = sql`(${toNumber(from!, c.pos).sql})::int`;
      return len
        ? { sql: sql`substr(${toText(s!).sql}, ${f}, greatest((${toNumber(len, c.pos).sql})::int, 0))`, type: 'String' }
        : { sql: sql`substr(${toText(s!).sql}, ${f})`, type: 'String' };
    },
  },
  match: { arity: [2, 2], run: ([s, re]) => ({ sql: sql`(${toText(s!).sql} ~ ${toText(re!).sql})`, type: 'Bool' }) },
  abs: numeric((x) => ({ sql: sql`abs(${x.sql})`, type: x.type })),
  floor: numeric((x) => ({ sql: sql`floor(${x.sql})`, type: x.type })),
  ceil: numeric((x) => ({ sql: sql`ceil(${x.sql})`, type: x.type })),
  round: {
    arity: [1, 2],
    run([x, places], c) {
      const n = toNumber(x!, c.pos);
      if (!places) return { sql: sql`round((${n.sql})::numeric)`, type: n.type };
      return { sql: sql`round((${n.sql})::numeric, (${toNumber(places, c.pos).sql})::int)`, type: 'Float' };
    },
  },
  jsonextractstring: jsonExtract('String'),
  jsonextractraw: jsonExtract('Raw'),
  jsonextractint: jsonExtract('Int'),
  jsonextractfloat: jsonExtract('Float'),
  jsonextractbool: jsonExtract('Bool'),
  jsonhas: jsonExtract('Has'),
  ...INTERVAL_FUNCTIONS,
  ...MORE_FUNCTIONS(),
};

export function callFunction(call: Call, args: Typed[], tz = 'UTC', session?: string): Typed {
  const lower = call.name.toLowerCase();
  if (!FUNCTIONS[lower] && lower.endsWith('if') && IF_COMBINABLE.has(lower.slice(0, -2))) {
    const cond = args.at(-1);
    if (args.length < 2) throw new QueryError(`${call.name}() takes its arguments and then a condition`, call.pos);
    const base = callFunction({ ...call, name: call.name.slice(0, -2) }, args.slice(0, -1), tz, session);
    return { ...base, sql: sql`${base.sql} filter (where ${toBool(cond!, call.pos).sql})` };
  }
  const fn = FUNCTIONS[lower];
  if (!fn) throw new QueryError(`Unsupported function call '${call.name}(...)'`, call.pos);
  if (call.star && call.name.toLowerCase() !== 'count')
    throw new QueryError(`${call.name}(*) is not supported`, call.pos);
  if (call.params && !fn.params) throw new QueryError(`${call.name}() takes no parameters`, call.pos);
  if (!call.params && fn.params) throw new QueryError(`${call.name}() needs its level: ${call.name}(0.9)(x)`, call.pos);
  if (call.distinct && !['count'].includes(call.name.toLowerCase()))
    throw new QueryError(`${call.name}(DISTINCT ...) is not supported`, call.pos);
  const [min, max] = fn.arity;
  if (args.length < min || args.length > max) {
    const want = min === max ? `${min}` : max > 30 ? `at least ${min}` : `${min} to ${max}`;
    throw new QueryError(
      `Function '${call.name}' expects ${want} argument${min === 1 && max === 1 ? '' : 's'}, found ${args.length}`,
      call.pos,
    );
  }
  return fn.run(args, call, tz, session);
}

export const FUNCTION_NAMES = Object.keys(FUNCTIONS);
