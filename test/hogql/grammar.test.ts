// The grammar PostHog users write, run through the Query API on a small known data set; every answer
// below was worked out by hand from the rows inserted here. Another project's rows are there too, and
// never show up.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents, insertPerson } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const ann = await insertPerson(db, a.project.id, ['ann'], { plan: 'pro', email: 'ann@x.io' });
await insertEvents(db, a.project.id, [
  // ann: 3 events over 2 days; bob: 2 events; carl: 1 event with tags.
  {
    event: 'signup',
    distinct_id: 'ann',
    person_id: ann.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { price: 10, path: '/a/b' },
  },
  {
    event: 'view',
    distinct_id: 'ann',
    person_id: ann.id,
    timestamp: new Date('2024-05-01T23:30:00Z'),
    properties: { price: 5, path: '/a/c' },
  },
  {
    event: 'view',
    distinct_id: 'ann',
    person_id: ann.id,
    timestamp: new Date('2024-05-03T08:00:00Z'),
    properties: { price: 1, path: '/x' },
  },
  {
    event: 'view',
    distinct_id: 'bob',
    timestamp: new Date('2024-05-02T12:00:00Z'),
    properties: { price: 7, path: '/a/b' },
  },
  {
    event: 'buy',
    distinct_id: 'bob',
    timestamp: new Date('2024-05-06T12:00:00Z'),
    properties: { price: 20, path: 'Hello World' },
  },
  {
    event: 'buy',
    distinct_id: 'carl',
    timestamp: new Date('2024-05-31T22:00:00Z'),
    properties: { price: 3, tags: 'x,y,z' },
  },
]);
const zed = await insertPerson(db, b.project.id, ['ann', 'zed'], { plan: 'SECRET' });
await insertEvents(db, b.project.id, [
  {
    event: 'SECRET',
    distinct_id: 'ann',
    person_id: zed.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { price: 999, path: 'SECRET' },
  },
]);

async function results(query: string, values?: Record<string, unknown>): Promise<unknown[][]> {
  const res = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query, ...(values ? { values } : {}) } },
  });
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
  // The answer echoes the query's text, so only its rows are searched.
  if (JSON.stringify(res.body.results).includes('SECRET')) throw new Error(`another project's row came back: ${query}`);
  return res.body.results as unknown as unknown[][];
}

const cases: [string, unknown[][]][] = [
  // UNION ALL, UNION DISTINCT, INTERSECT, EXCEPT; the types of a UNION's columns are shared.
  ["select event from events where event = 'signup' union all select 'x' order by 1", [['signup'], ['x']]],
  ['select count() from (select distinct_id from events union all select distinct_id from events)', [[12]]],
  ['select count() from (select distinct_id from events union distinct select distinct_id from events)', [[3]]],
  [
    "select distinct_id from events where event = 'view' intersect select distinct_id from events where event = 'buy'",
    [['bob']],
  ],
  ["select distinct_id from events except select distinct_id from events where event = 'view'", [['carl']]],
  ['select 1 union all select 2.5', [[1], [2.5]]],
  // CTEs: chained, used twice, shadowing a table, and ClickHouse's `WITH expr AS name`.
  [
    'with v as (select distinct_id, count() c from events group by distinct_id), top as ' +
      '(select * from v where c >= 2) ' +
      'select distinct_id, c from top order by distinct_id',
    [
      ['ann', 3],
      ['bob', 2],
    ],
  ],
  ['with v as (select 1 as n) select count() from v x, v y', [[1]]],
  ['with events as (select 1 as event) select event from events', [[1]]],
  ['with 10 as ten select count() from events where properties.price >= ten', [[2]]],
  // Window functions.
  [
    'select distinct_id, event, row_number() over (partition by distinct_id order by ' +
      "timestamp) from events where distinct_id = 'ann' order by timestamp",
    [
      ['ann', 'signup', 1],
      ['ann', 'view', 2],
      ['ann', 'view', 3],
    ],
  ],
  [
    "select event, lag(event) over (order by timestamp), lead(event, 1, 'none') over (order by " +
      "timestamp) from events where distinct_id = 'ann' order by timestamp",
    [
      ['signup', null, 'view'],
      ['view', 'signup', 'view'],
      ['view', 'view', 'none'],
    ],
  ],
  [
    'select distinct_id, rank() over w, sum(properties.price) over (order by timestamp rows ' +
      'between 1 preceding and current row) ' +
      "from events where distinct_id = 'ann' window w as (order by toDate(timestamp)) order by timestamp",
    [
      ['ann', 1, 10],
      ['ann', 1, 15],
      ['ann', 3, 6],
    ],
  ],
  [
    'select distinct_id, count() over (partition by distinct_id) from events order by timestamp limit 2',
    [
      ['ann', 3],
      ['ann', 3],
    ],
  ],
  // Arrays and lambdas.
  [
    'select [1, 2, 3], length([1, 2]), has([1, 2], 2), has([1, 2], 5), [10, 20, 30][-1], [10, 20][1]',
    [[[1, 2, 3], 2, true, false, 30, 10]],
  ],
  [
    'select arrayMap(x -> x * 2, [1, 2, 3]), arrayFilter(x -> x > 1, [1, 2, 3]), arrayMap((x, ' +
      "y) -> concat(x, y), ['a', 'b'], ['c', 'd'])",
    [
      [
        [2, 4, 6],
        [2, 3],
        ['ac', 'bd'],
      ],
    ],
  ],
  ['select arrayExists(x -> x = 2, [1, 2]), arrayAll(x -> x > 1, [1, 2]), arrayMap(x -> x, [])', [[true, false, []]]],
  ["select splitByChar(',', properties.tags) from events where distinct_id = 'carl'", [[['x', 'y', 'z']]]],
  [
    "select arrayJoin(splitByChar(',', properties.tags)) as tag from events where distinct_id " +
      "= 'carl' order by tag desc",
    [['z'], ['y'], ['x']],
  ],
  // Conditionals.
  [
    "select if(1 = 1, 'y', 'n'), multiIf(false, 1, true, 2, 3), coalesce(null, 'c'), nullIf(1, 1), nullIf(2, 1)",
    [['y', 2, 'c', null, 2]],
  ],
  // Dates.
  [
    'select toStartOfDay(timestamp), toStartOfWeek(timestamp), toStartOfMonth(timestamp), ' +
      "toDate(timestamp) from events where distinct_id = 'carl'",
    [['2024-05-31T00:00:00.000000Z', '2024-05-26', '2024-05-01', '2024-05-31']],
  ],
  [
    "select dateDiff('day', toDateTime('2024-05-01T23:00:00Z'), toDateTime('2024-05-02T01:00:00Z')), " +
      "dateDiff('hour', toDateTime('2024-05-01T23:59:00Z'), toDateTime('2024-05-02T00:01:00Z')), " +
      "dateDiff('month', toDateTime('2024-01-31T00:00:00Z'), toDateTime('2024-03-01T00:00:00Z'))",
    [[1, 1, 2]],
  ],
  [
    "select dateAdd('day', 2, toDateTime('2024-05-01T10:00:00Z')), dateSub('hour', 1, " +
      "toDateTime('2024-05-01T10:00:00Z'))",
    [['2024-05-03T10:00:00.000000Z', '2024-05-01T09:00:00.000000Z']],
  ],
  [
    "select toTimeZone(timestamp, 'America/New_York'), toStartOfDay(toTimeZone(timestamp, " +
      "'Asia/Tokyo')) from events where distinct_id = 'carl'",
    [['2024-05-31T18:00:00.000000-04:00', '2024-06-01T00:00:00.000000+09:00']],
  ],
  ['select count() from events where timestamp > now() - interval 100 year and timestamp < now()', [[6]]],
  // Strings.
  [
    "select lower('AbC'), extract('path-123', '[0-9]+'), extract('abc', '[0-9]+'), " +
      "replaceRegexpAll('a1b2', '[0-9]', '_'), 'abc' like 'a%', 'ABC' ilike 'a%'",
    [['abc', '123', '', 'a_b_', true, true]],
  ],
  ["select count() from events where properties.path like '/a/%'", [[3]]],
  // Properties, persons, placeholders.
  ['select sum(properties.price) from events where properties.path = {p}', [[17]]],
  [
    'select person.properties.email, count() from events group by 1 order by 1',
    [
      ['ann@x.io', 3],
      [null, 3],
    ],
  ],
  ['select count() from events where distinct_id in {ids} and properties.price > {min}', [[4]]],
];

t.test('the grammar PostHog users write, answered from hand-computed rows', async (t) => {
  for (const [query, expected] of cases) {
    const values = query.includes('{p}')
      ? { p: '/a/b' }
      : query.includes('{ids}')
        ? { ids: ['ann', 'bob'], min: 4 }
        : undefined;
    t.same(await results(query, values), expected, query);
  }
});

t.test('CTEs, unions and subqueries cannot reach another project', async (t) => {
  for (const query of [
    "with e as (select * from events) select count() from e where event = 'SECRET'",
    "select count() from (select event from events union all select event from events) where event = 'SECRET'",
    "select (select count() from events where event = 'SECRET')",
    'select count() from events where distinct_id in (with d as (select distinct_id from ' +
      "person_distinct_ids) select * from d) and event = 'SECRET'",
    "select arrayFilter(x -> x = 'SECRET', [event]) from events where event = 'SECRET'",
  ]) {
    const rows = await results(query);
    t.notOk(JSON.stringify(rows).includes('SECRET'), query);
    t.ok(!rows.length || rows[0]![0] === 0 || Array.isArray(rows[0]![0]), query);
  }
});

t.test('what is not compiled is a 400 naming it', async (t) => {
  const cases: [string, RegExp][] = [
    ['select arrayJoin([1]) + 1', /arrayJoin\(\) is supported as a whole column of SELECT only/],
    ['select row_number()', /row_number\(\) needs an OVER/],
    ['select uniq(event) over () from events', /uniq\(\) cannot be used as a window function/],
    ['select lower(event) over () from events', /cannot be used as a window function/],
    ['select sum(properties.price) over w from events', /Window "w" is not defined/],
    ['select arrayMap(x -> x, 1)', /takes arrays after its lambda/],
    ['select x -> x', /A lambda/],
    ["select toTimeZone(timestamp, 'Mars/Base') from events", /Unknown time zone/],
    ['select 1 from events array join [1] as x', /ARRAY JOIN/],
  ];
  for (const [query, detail] of cases) {
    const res = await call('query_create', {
      key: a.key,
      params: { project_id: a.project.id },
      body: { query: { kind: 'HogQLQuery', query } },
    });
    t.equal(res.status, 400, query);
    t.match(res.body, { type: 'validation_error', detail }, query);
  }
});

t.test("dates are cut and answered in the project's timezone, as PostHog's team timezone", async (t) => {
  const ny = await makeTenant(db);
  const patched = await call('organizations_projects_partial_update', {
    key: ny.key,
    params: { organization_id: ny.organization.id, id: ny.project.id },
    body: { timezone: 'America/New_York' },
  });
  t.equal(patched.status, 200);
  // New York is UTC-5 until 2024-03-10 02:00 local, UTC-4 after: the local days of these four events are
  // March 9 (23:30), March 10 (00:30 and 23:59) and March 11 (00:00). In UTC they would be two and two.
  await insertEvents(
    db,
    ny.project.id,
    ['2024-03-10T04:30:00Z', '2024-03-10T05:30:00Z', '2024-03-11T03:59:00Z', '2024-03-11T04:00:00Z'].map((at) => ({
      event: 'tz',
      distinct_id: 'nyc',
      timestamp: new Date(at),
    })),
  );
  let types: unknown;
  const query = async (q: string) => {
    const res = await call('query_create', {
      key: ny.key,
      params: { project_id: ny.project.id },
      body: { query: { kind: 'HogQLQuery', query: q } },
    });
    t.equal(res.status, 200, q);
    types = res.body.types;
    return res.body.results;
  };
  t.same(
    await query("select toStartOfDay(timestamp) as d, count() from events where event = 'tz' group by d order by d"),
    [
      ['2024-03-09T00:00:00.000000-05:00', 1],
      ['2024-03-10T00:00:00.000000-05:00', 2],
      ['2024-03-11T00:00:00.000000-04:00', 1],
    ],
  );
  t.same(await query("select toDate(timestamp), toHour(timestamp) from events where event = 'tz' order by timestamp"), [
    ['2024-03-09', 23],
    ['2024-03-10', 0],
    ['2024-03-10', 23],
    ['2024-03-11', 0],
  ]);
  t.same(
    await query(
      "select timestamp, toTimeZone(timestamp, 'UTC') from events where event = 'tz' order by timestamp limit 1",
    ),
    [['2024-03-09T23:30:00.000000-05:00', '2024-03-10T04:30:00.000000+00:00']],
    "a date-time is written in the project's zone unless the query names one",
  );
  t.same(types, [
    ['timestamp', "DateTime64(6, 'America/New_York')"],
    ["toTimeZone(timestamp, 'UTC')", "DateTime64(6, 'UTC')"],
  ]);
  t.same(
    await results("select toDate(timestamp), count() from events where event = 'tz' group by 1"),
    [],
    'the other project sees none of them',
  );
});

t.test(
  "text without an offset is read in the project's timezone, as ClickHouse reads it in the column's",
  async (t) => {
    const ny = await makeTenant(db);
    const patched = await call('organizations_projects_partial_update', {
      key: ny.key,
      params: { organization_id: ny.organization.id, id: ny.project.id },
      body: { timezone: 'America/New_York' },
    });
    t.equal(patched.status, 200);
    // New York springs from 02:00 EST (07:00Z) to 03:00 EDT on 2024-03-10. In New York's wall clock these are
    // 1: Mar 9 23:59:59, 2: Mar 10 00:00, 3: 01:30, 4: 03:00, 5: 03:30, 6: 23:59:59, 7: Mar 11 00:00.
    const at = [
      '2024-03-10T04:59:59Z',
      '2024-03-10T05:00:00Z',
      '2024-03-10T06:30:00Z',
      '2024-03-10T07:00:00Z',
      '2024-03-10T07:30:00Z',
      '2024-03-11T03:59:59Z',
      '2024-03-11T04:00:00Z',
    ];
    // Events 3 and 4 carry their time as New York text, event 5 as UTC text.
    const local: Record<number, string> = {
      2: '2024-03-10 01:30',
      3: '2024-03-10 03:00:00',
      4: '2024-03-10T07:30:00Z',
    };
    await insertEvents(
      db,
      ny.project.id,
      at.map((ts, i) => ({
        event: 'w',
        distinct_id: `n${i + 1}`,
        timestamp: new Date(ts),
        properties: local[i] ? { at: local[i] } : {},
      })),
    );
    const ids = async (where: string, values?: Record<string, unknown>) => {
      const res = await call('query_create', {
        key: ny.key,
        params: { project_id: ny.project.id },
        body: {
          query: {
            kind: 'HogQLQuery',
            query: `select distinct_id from events where event = 'w' and (${where}) order by timestamp`,
            ...(values ? { values } : {}),
          },
        },
      });
      t.equal(res.status, 200, where);
      return (res.body.results as string[][]).map((r) => Number(r[0]!.slice(1)));
    };
    // Each expected list was read off the wall clock above; in UTC the same text would select other events.
    const cases: [string, number[]][] = [
      ["timestamp >= '2024-03-10 00:00:00' and timestamp < '2024-03-11 00:00:00'", [2, 3, 4, 5, 6]],
      ["timestamp >= '2024-03-10'", [2, 3, 4, 5, 6, 7]],
      ["timestamp < '2024-03-10'", [1]],
      ["timestamp between '2024-03-10 01:30:00' and '2024-03-10 03:30:00'", [3, 4, 5]],
      ["timestamp not between '2024-03-10 00:00:00' and '2024-03-10 23:59:59'", [1, 7]],
      ["timestamp in ('2024-03-10 03:00:00', '2024-03-10 00:00:00', '2024-03-09 23:59:59')", [1, 2, 4]],
      ["'2024-03-10 03:00:00' <= timestamp", [4, 5, 6, 7]],
      // An offset or Z keeps its own zone.
      ["timestamp >= '2024-03-10T05:00:00Z' and timestamp < '2024-03-10T03:00:00-04:00'", [2, 3]],
      ["timestamp = '2024-03-10T07:30:00+00:00'", [5]],
      // A date-time with a zone of its own reads text in that zone.
      ["toTimeZone(timestamp, 'UTC') >= '2024-03-11 00:00:00'", [6, 7]],
      ["toTimeZone(timestamp, 'Asia/Tokyo') < '2024-03-10 16:00:00'", [1, 2, 3]],
      // A date meeting a date-time is its first moment in the same zone.
      ["timestamp >= toDate('2024-03-11')", [7]],
      ["toDate(timestamp) = toDate('2024-03-10 01:00:00')", [2, 3, 4, 5, 6]],
      // Text read by toDateTime, or from a property compared with a date-time.
      ["toDateTime('2024-03-10 03:30:00') = timestamp", [5]],
      ['toDateTime(properties.at) = timestamp', [3, 4, 5]],
      ["if(event = 'w', timestamp, '2024-03-10 03:00:00') = '2024-03-10 03:00:00'", [4]],
      ["timestamp + interval 1 hour > '2024-03-11 00:00:00'", [6, 7]],
    ];
    for (const [where, expected] of cases) t.same(await ids(where), expected, where);
    t.same(await ids('timestamp >= {from}', { from: '2024-03-10 03:00:00' }), [4, 5, 6, 7], 'a placeholder too');
    const res = await call('query_create', {
      key: ny.key,
      params: { project_id: ny.project.id },
      body: {
        query: {
          kind: 'HogQLQuery',
          query: "select toDateTime('2024-03-10 00:00:00'), toDateTime('2024-03-10T12:00:00Z')",
        },
      },
    });
    t.same(res.body.results, [['2024-03-10T00:00:00.000000-05:00', '2024-03-10T08:00:00.000000-04:00']]);
    t.same(
      await results(
        "select count() from events where timestamp >= '2024-05-01 10:00:00' and timestamp < '2024-05-01 23:30'",
      ),
      [[1]],
      'a project in UTC reads the same text in UTC',
    );
  },
);
