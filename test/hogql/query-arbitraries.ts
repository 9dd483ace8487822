// The HogQL the fuzz test sends: random expressions over every field, function and table it knows, and
// queries that mostly make sense (so that many run), with windows, arrays, lambdas, CTEs and unions.
import fc from 'fast-check';
import { oddStrings } from '../helpers/arbitraries.js';

const FIELDS = [
  'event',
  'distinct_id',
  'timestamp',
  'created_at',
  'uuid',
  'person_id',
  'elements_chain',
  'team_id',
  'properties',
  'properties.$browser',
  'properties.price',
  'properties.nested.k',
  "properties['weird key']",
  '$session_id',
  'person.properties.plan',
  'person.properties.email',
  'person.id',
  'person.created_at',
  'person.is_identified',
  'id',
  'is_identified',
  'e.event',
  'e.properties.$browser',
  'p.id',
  'p.properties.plan',
  'd.distinct_id',
  'd.person_id',
  'project_id',
  'nope',
  'pg_catalog.pg_user',
  'events.event',
  '`event`',
  '"project_id"',
  'q.c0',
  't0.project_id',
  'ev.project_id',
];
const FUNCTIONS = [
  'count',
  'uniq',
  'sum',
  'avg',
  'min',
  'max',
  'countIf',
  'toDate',
  'toDateTime',
  'toString',
  'toInt',
  'toFloat',
  'toStartOfDay',
  'toStartOfWeek',
  'toStartOfMonth',
  'now',
  'today',
  'if',
  'multiIf',
  'coalesce',
  'ifNull',
  'lower',
  'length',
  'concat',
  'substring',
  'match',
  'round',
  'abs',
  'JSONExtractString',
  'JSONExtractInt',
  'JSONHas',
  'toIntervalDay',
  'pg_sleep',
  'version',
  'current_setting',
  'set_config',
  'pg_read_file',
  'dblink',
  'query_to_xml',
  'lo_import',
  'nextval',
];
const TABLES = [
  'events',
  'events e',
  'events AS e',
  'persons',
  'persons p',
  'person_distinct_ids d',
  '(select * from events)',
  '(select event, count() as c from events group by event) s',
  'users',
  'pg_user',
  'information_schema.tables',
  'public.events',
  '"events"',
  'organizations',
  'events_1',
  'pg_catalog.pg_class',
];

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const constant = fc.oneof(
  fc.constantFrom(
    "'Chrome'",
    "'2024-05-01'",
    "'2024-05-01 10:00:00'",
    '1',
    '0',
    '-1',
    '2.5',
    '1e300',
    '9223372036854775807',
    "'%'",
    "'('",
    'NULL',
    'true',
    "'n/a'",
    "'ann'",
    '{v}',
    '{missing}',
  ),
  fc.string({ maxLength: 8 }).map(quote),
  oddStrings.map(quote),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => String(d)),
);
const OPS = ['=', '!=', '<', '>', '<=', '>=', '+', '-', '*', '/', '%', '||', 'AND', 'OR', 'LIKE', 'ILIKE', 'NOT LIKE'];

const { expr } = fc.letrec<{ expr: string; call: string; bin: string; other: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...FIELDS),
    constant,
    tie('call'),
    tie('bin'),
    tie('other'),
  ),
  call: fc
    .tuple(fc.constantFrom(...FUNCTIONS), fc.boolean(), fc.array(tie('expr'), { maxLength: 3 }))
    .map(([f, distinct, args]) => `${f}(${distinct && args.length ? 'DISTINCT ' : ''}${args.join(', ')})`),
  bin: fc.tuple(tie('expr'), fc.constantFrom(...OPS), tie('expr')).map(([x, op, y]) => `(${x} ${op} ${y})`),
  other: fc.oneof(
    tie('expr').map((x) => `NOT ${x}`),
    tie('expr').map((x) => `${x} IS NULL`),
    fc
      .tuple(tie('expr'), fc.array(constant, { minLength: 1, maxLength: 3 }))
      .map(([x, l]) => `${x} IN (${l.join(', ')})`),
    tie('expr').map((x) => `${x} IN {ids}`),
    tie('expr').map((x) => `${x} IN (select distinct_id from person_distinct_ids)`),
    fc.tuple(tie('expr'), constant).map(([x, n]) => `${x} - INTERVAL ${n} DAY`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([c, x, y]) => `CASE WHEN ${c} THEN ${x} ELSE ${y} END`),
  ),
}));

const select = fc
  .record({
    distinct: fc.boolean(),
    columns: fc.oneof(
      fc.constant('*'),
      fc
        .array(fc.tuple(expr, fc.option(fc.constantFrom('a', 'b', 'c', 'event'))), { minLength: 1, maxLength: 4 })
        .map((cs) => cs.map(([e, al]) => (al ? `${e} AS ${al}` : e)).join(', ')),
    ),
    table: fc.option(fc.constantFrom(...TABLES), { freq: 8 }),
    join: fc.option(
      fc.tuple(fc.constantFrom('JOIN', 'LEFT JOIN', 'FULL JOIN', 'CROSS JOIN', ','), fc.constantFrom(...TABLES), expr),
    ),
    where: fc.option(expr),
    groupBy: fc.option(fc.oneof(expr, fc.constantFrom('1', '2', 'a', 'event'))),
    having: fc.option(expr, { freq: 4 }),
    orderBy: fc.option(
      fc.tuple(fc.oneof(expr, fc.constantFrom('1', 'a', 'timestamp')), fc.constantFrom('', ' ASC', ' DESC')),
    ),
    limit: fc.option(fc.constantFrom('0', '1', '10', '100000', '-1', '{n}', "'x'", '1.5')),
  })
  .map((q) => {
    let s = `SELECT ${q.distinct ? 'DISTINCT ' : ''}${q.columns}`;
    if (q.table) s += ` FROM ${q.table}`;
    if (q.table && q.join)
      s +=
        q.join[0] === ',' || q.join[0] === 'CROSS JOIN'
          ? ` ${q.join[0]} ${q.join[1]}`
          : ` ${q.join[0]} ${q.join[1]} ON ${q.join[2]}`;
    if (q.where) s += ` WHERE ${q.where}`;
    if (q.groupBy) s += ` GROUP BY ${q.groupBy}`;
    if (q.having) s += ` HAVING ${q.having}`;
    if (q.orderBy) s += ` ORDER BY ${q.orderBy[0]}${q.orderBy[1]}`;
    if (q.limit) s += ` LIMIT ${q.limit}`;
    return s;
  });

// Queries that mostly make sense, so that many run: fields of the table, functions with their arity.
const saneField = fc.constantFrom(
  'event',
  'distinct_id',
  'timestamp',
  'properties.$browser',
  'properties.price',
  'properties.nested.k',
  'person.properties.plan',
  'person_id',
  'uuid',
  'team_id',
  "properties['weird key']",
);
const saneConst = fc.oneof(
  fc.constantFrom("'Chrome'", '1', '2.5', "'2024-05-01'", "'ann'", 'NULL', "'signup'", '{v}', '0'),
  fc.string({ maxLength: 6 }).map(quote),
  fc.integer({ min: -1000, max: 1000 }).map(String),
);
const saneValue = fc.oneof(
  saneField,
  saneConst,
  fc
    .tuple(
      fc.constantFrom('toDate', 'toStartOfDay', 'toStartOfWeek', 'lower', 'length', 'toString', 'toFloat'),
      saneField,
    )
    .map(([f, x]) => `${f}(${x})`),
  fc.tuple(saneField, fc.constantFrom('+', '-', '*', '/', '%', '||'), saneConst).map(([x, op, y]) => `${x} ${op} ${y}`),
  fc.tuple(saneField, saneConst).map(([x, y]) => `coalesce(${x}, ${y})`),
);
const saneCond: fc.Arbitrary<string> = fc.letrec<{ cond: string }>((tie) => ({
  cond: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc
      .tuple(saneValue, fc.constantFrom('=', '!=', '<', '>=', 'LIKE', 'ILIKE', 'NOT ILIKE'), saneValue)
      .map(([x, op, y]) => `${x} ${op} ${y}`),
    fc
      .tuple(saneField, fc.array(saneConst, { minLength: 1, maxLength: 3 }))
      .map(([x, l]) => `${x} IN (${l.join(', ')})`),
    saneField.map((x) => `${x} IS NOT NULL`),
    saneField.map((x) => `${x} IN {ids}`),
    fc.constantFrom(
      'timestamp > now() - INTERVAL 30 DAY',
      "timestamp > toDateTime('2024-05-01')",
      'person_id IN (select id from persons)',
    ),
    fc.tuple(tie('cond'), fc.constantFrom('AND', 'OR'), tie('cond')).map(([x, op, y]) => `(${x}) ${op} (${y})`),
    tie('cond').map((x) => `NOT (${x})`),
  ),
})).cond;
const saneSelect = fc.oneof(
  fc
    .tuple(
      fc.array(saneValue, { minLength: 1, maxLength: 3 }),
      fc.option(saneCond),
      fc.option(fc.constantFrom(' ORDER BY 1', ' ORDER BY 1 DESC')),
      fc.option(fc.constantFrom(' LIMIT 2', ' LIMIT 0', ' LIMIT 20000')),
    )
    .map(
      ([cols, where, order, limit]) =>
        `SELECT ${cols.join(', ')} FROM events${where ? ` WHERE ${where}` : ''}${order ?? ''}${limit ?? ''}`,
    ),
  fc
    .tuple(
      saneValue,
      fc.constantFrom(
        'count()',
        'uniq(distinct_id)',
        'sum(properties.price)',
        'avg(properties.price)',
        'max(timestamp)',
        "countIf(event = 'signup')",
        'min(properties.$browser)',
      ),
      fc.option(saneCond),
    )
    .map(
      ([g, agg, where]) =>
        `SELECT ${g} AS g, ${agg} FROM events${where ? ` WHERE ${where}` : ''} GROUP BY g ORDER BY 2 DESC`,
    ),
  fc
    .tuple(fc.constantFrom('e.event', 'p.properties.plan', 'd.distinct_id', 'count()'), fc.option(saneCond))
    .map(([col, where]) => {
      const from =
        'FROM events e LEFT JOIN persons p ON e.person_id = p.id ' +
        'LEFT JOIN person_distinct_ids d ON d.distinct_id = e.distinct_id';
      const filter = where ? ` WHERE ${where.replace(/\bevent\b/g, 'e.event')}` : '';
      if (col === 'count()') return `SELECT count() ${from}${filter}`;
      return `SELECT ${col}, count() ${from}${filter} GROUP BY 1`;
    }),
);

/** The grammar of PostHog's parser beyond a single SELECT: CTEs, set operations, windows, arrays and lambdas. */
const window = fc.constantFrom(
  'row_number() OVER (PARTITION BY distinct_id ORDER BY timestamp)',
  'rank() OVER (ORDER BY event)',
  'lag(event) OVER (ORDER BY timestamp)',
  "lead(event, 1, 'none') OVER (PARTITION BY event ORDER BY timestamp)",
  'count() OVER (PARTITION BY distinct_id)',
  'sum(properties.price) OVER (ORDER BY timestamp ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)',
  'max(timestamp) OVER w',
  'first_value(event) OVER w',
);
const arrayExpr = fc.constantFrom(
  'arrayMap(x -> concat(x, event), [distinct_id, event])',
  "arrayFilter(x -> x != '', [properties.$browser, event])",
  "arrayExists(x -> x = 'ann', [distinct_id])",
  'has([event, distinct_id], {v})',
  "length(splitByChar('a', event))",
  'arrayMap((x, y) -> x || y, [event], [distinct_id])',
  '[event, properties.$browser][-1]',
);
const richSelect = fc
  .tuple(
    fc.array(fc.oneof(saneValue, window, arrayExpr), { minLength: 1, maxLength: 3 }),
    fc.option(saneCond),
    fc.constantFrom('events', 'src', 'both'),
    fc.option(fc.constantFrom('UNION ALL', 'UNION DISTINCT', 'INTERSECT', 'EXCEPT')),
    fc.option(fc.constantFrom(' ORDER BY 1', ' LIMIT 3')),
  )
  .map(([cols, where, from, setOp, tail]) => {
    // `src` is a CTE over events; `both` a UNION of events with itself in a subquery: each must stay in the project.
    const ctes =
      from === 'src'
        ? "WITH src AS (SELECT * FROM events WHERE event != 'none'), " +
          'ids AS (SELECT distinct_id FROM person_distinct_ids) '
        : '';
    const source = from === 'both' ? '(SELECT * FROM events UNION ALL SELECT * FROM events)' : from;
    const filter = where ? ` WHERE ${where}` : '';
    const body = `SELECT ${cols.join(', ')} FROM ${source}${filter} WINDOW w AS (ORDER BY timestamp)`;
    const second = setOp ? ` ${setOp} SELECT ${cols.map(() => 'event').join(', ')} FROM events` : '';
    return `${ctes}${body}${second}${tail ?? ''}`;
  });

/** A query, or one broken by cutting or splicing characters, or noise. */
export const queryText = fc.oneof(
  { weight: 8, arbitrary: saneSelect },
  { weight: 6, arbitrary: richSelect },
  { weight: 4, arbitrary: select },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.oneof(select, saneSelect, richSelect),
        fc.nat(),
        fc.nat({ max: 5 }),
        fc.constantFrom('', "'", '(', ')', ';', '--', '/*', '`', '"', '{', ' union select * from users'),
      )
      .map(([s, at, cut, ins]) => s.slice(0, at % (s.length + 1)) + ins + s.slice((at % (s.length + 1)) + cut)),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
);
export const values = fc.constantFrom(
  {},
  { v: 'Chrome', ids: ['ann', 'anon'], n: 5 },
  { v: 1, ids: [], n: -1 },
  { v: [1], ids: 'ann', n: 'x' },
  { v: { a: 1 }, ids: [null, true, 2] },
);
