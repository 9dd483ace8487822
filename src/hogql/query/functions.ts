import { sql, type SQL } from 'drizzle-orm';
import type { Node } from './ast.js';
import { QueryError } from './errors.js';
import { INTERVAL_UNITS } from './parser.js';
import { property } from './tables.js';
import { coerce, common, toBool, toDate, toDateTime, toNumber, toText, type Typed } from './types.js';

type Call = Extract<Node, { k: 'call' }>;

interface Fn {
  /** Argument counts allowed, [min, max]. */
  arity: [number, number];
  run(args: Typed[], call: Call): Typed;
}

const join = (parts: SQL[]) => sql.join(parts, sql`, `);

function numeric(f: (x: Typed) => Typed): Fn {
  return { arity: [1, 1], run: ([x], c) => f(toNumber(x!, c.pos)) };
}

function truncate(unit: 'minute' | 'hour' | 'day' | 'month' | 'quarter' | 'year', asDate: boolean): Fn {
  return {
    arity: [1, 1],
    run([x], c) {
      const t = sql`date_trunc(${sql.raw(`'${unit}'`)}, ${toDateTime(x!, c.pos).sql}, 'UTC')`;
      return asDate ? { sql: sql`((${t}) at time zone 'UTC')::date`, type: 'Date' } : { sql: t, type: 'DateTime' };
    },
  };
}

function part(field: 'year' | 'month' | 'day' | 'hour' | 'minute' | 'isodow'): Fn {
  return {
    arity: [1, 1],
    run: ([x], c) => ({
      sql: sql`extract(${sql.raw(field)} from (${toDateTime(x!, c.pos).sql}) at time zone 'UTC')::int`,
      type: 'Int',
    }),
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

function combine(args: Typed[], at: number): Typed[] {
  const type = common(
    args.map((a) => a.type),
    at,
  );
  return args.map((a) => coerce(a, type === 'Null' ? 'String' : type, at));
}

const INTERVAL_FUNCTIONS = Object.fromEntries(
  INTERVAL_UNITS.map((u): [string, Fn] => [
    `tointerval${u}`,
    { arity: [1, 1], run: ([n], c) => interval(n!, u, c.pos) },
  ]),
);

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
  avg: numeric((x) => ({ sql: sql`avg(${x.sql})`, type: 'Float' })),
  min: minMax('min'),
  max: minMax('max'),
  todate: { arity: [1, 1], run: ([x], c) => toDate(x!, c.pos) },
  todatetime: { arity: [1, 1], run: ([x], c) => toDateTime(x!, c.pos) },
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
    run([x, mode], c) {
      const monday = mode !== undefined && typeof mode.constant === 'number' && mode.constant % 2 === 1;
      const t = toDateTime(x!, c.pos).sql;
      const start = monday
        ? sql`date_trunc('week', ${t}, 'UTC')`
        : sql`(date_trunc('week', (${t}) + interval '1 day', 'UTC') - interval '1 day')`;
      return { sql: sql`((${start}) at time zone 'UTC')::date`, type: 'Date' };
    },
  },
  toyear: part('year'),
  tomonth: part('month'),
  todayofmonth: part('day'),
  tohour: part('hour'),
  tominute: part('minute'),
  todayofweek: part('isodow'),
  now: { arity: [0, 0], run: () => ({ sql: sql`now()`, type: 'DateTime' }) },
  today: { arity: [0, 0], run: () => ({ sql: sql`(now() at time zone 'UTC')::date`, type: 'Date' }) },
  if: {
    arity: [3, 3],
    run([cond, a, b], c) {
      const [x, y] = combine([a!, b!], c.pos);
      return { sql: sql`(case when ${toBool(cond!, c.pos).sql} then ${x!.sql} else ${y!.sql} end)`, type: x!.type };
    },
  },
  multiif: {
    arity: [3, 63],
    run(args, c) {
      if (args.length % 2 === 0)
        throw new QueryError('multiIf() takes pairs of condition and value, then a default', c.pos);
      const values = combine(
        args.filter((_, i) => i % 2 === 1 || i === args.length - 1),
        c.pos,
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
    run: (args, c) => {
      const xs = combine(args, c.pos);
      return { sql: sql`coalesce(${join(xs.map((x) => x.sql))})`, type: xs[0]!.type };
    },
  },
  ifnull: {
    arity: [2, 2],
    run: (args, c) => {
      const xs = combine(args, c.pos);
      return { sql: sql`coalesce(${join(xs.map((x) => x.sql))})`, type: xs[0]!.type };
    },
  },
  lower: { arity: [1, 1], run: ([x]) => ({ sql: sql`lower(${toText(x!).sql})`, type: 'String' }) },
  upper: { arity: [1, 1], run: ([x]) => ({ sql: sql`upper(${toText(x!).sql})`, type: 'String' }) },
  length: { arity: [1, 1], run: ([x]) => ({ sql: sql`length(${toText(x!).sql})`, type: 'Int', ch: 'UInt64' }) },
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
};

export function callFunction(call: Call, args: Typed[]): Typed {
  const fn = FUNCTIONS[call.name.toLowerCase()];
  if (!fn) throw new QueryError(`Unsupported function call '${call.name}(...)'`, call.pos);
  if (call.star && call.name.toLowerCase() !== 'count')
    throw new QueryError(`${call.name}(*) is not supported`, call.pos);
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
  return fn.run(args, call);
}

export const FUNCTION_NAMES = Object.keys(FUNCTIONS);
