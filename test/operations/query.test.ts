import { sql } from 'drizzle-orm';
import t from 'tap';
import { runReadOnly } from '../../src/query/queries.js';
import { sqlState } from '../../src/core/sql-state.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents, insertPerson } from '../helpers/event-rows.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const a = await makeTenant(db);
const b = await makeTenant(db);
const params = { project_id: a.project.id };
const ann = await insertPerson(
  db,
  a.project.id,
  ['ann', 'ann-2'],
  { plan: 'pro', email: 'ann@x.io' },
  new Date('2024-04-01T00:00:00Z'),
);
const bob = await insertPerson(db, a.project.id, ['bob'], { plan: 'free' }, new Date('2024-04-02T00:00:00Z'));
const rows = await insertEvents(db, a.project.id, [
  {
    event: 'signup',
    distinct_id: 'ann',
    person_id: ann.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { $browser: 'Chrome', price: 12, nested: { k: 'v' } },
  },
  {
    event: 'signup',
    distinct_id: 'bob',
    person_id: bob.id,
    timestamp: new Date('2024-05-01T11:30:00Z'),
    properties: { $browser: 'Firefox', price: '7.5' },
  },
  {
    event: '$pageview',
    distinct_id: 'ann-2',
    person_id: ann.id,
    timestamp: new Date('2024-05-02T09:00:00Z'),
    properties: { $browser: 'Chrome', price: 'n/a', $session_id: 's1' },
  },
  { event: '$pageview', distinct_id: 'anon', timestamp: new Date('2024-05-03T09:00:00Z'), properties: {} },
]);
const secretPerson = await insertPerson(db, b.project.id, ['zed'], { plan: 'secret' });
await insertEvents(db, b.project.id, [
  {
    event: 'secret',
    distinct_id: 'zed',
    person_id: secretPerson.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { $browser: 'Chrome', price: 1000 },
  },
]);

const hogql = (
  query: string,
  extra: Record<string, unknown> = {},
  key = a.key,
  route: 'query_create' | 'environments_query_create' = 'query_create',
) => call(route, { key, params, body: { query: { kind: 'HogQLQuery', query, ...extra } } });
const results = async (query: string, extra: Record<string, unknown> = {}) => {
  const res = await hogql(query, extra);
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
  return res.body.results;
};

t.test('HogQLQuery: counts by event, in PostHog shape', async (t) => {
  const res = await hogql('select event, count() from events group by event order by event');
  t.equal(res.status, 200);
  t.same(res.body.results, [
    ['$pageview', 2],
    ['signup', 2],
  ]);
  t.same(res.body.columns, ['event', 'count()']);
  t.same(res.body.types, [
    ['event', 'String'],
    ['count()', 'UInt64'],
  ]);
  t.match(res.body, { limit: 100, offset: 0, hasMore: false });
  t.equal(res.body.hogql, 'SELECT event, count() FROM events GROUP BY event ORDER BY event ASC LIMIT 100');
  const env = await hogql('select count() from events', {}, a.key, 'environments_query_create');
  t.same([env.status, env.body.results], [200, [[4]]], 'the environments route is the same operation');
  const current = await call('query_create', {
    key: a.key,
    params: { project_id: '@current' },
    body: { query: { kind: 'HogQLQuery', query: 'select count() from events' } },
  });
  t.same(current.body.results, [[4]], '@current works');
  const agent = await call('query_create', {
    key: a.key,
    params,
    body: {
      query: {
        kind: 'HogQLQuery',
        query: 'SELECT event, count() FROM events GROUP BY event ORDER BY count() DESC LIMIT 10',
      },
      refresh: 'blocking',
      client_query_id: 'abc',
      name: 'x',
    },
  });
  t.equal(agent.status, 200, 'the request the agent toolkit sends');
});

t.test('HogQLQuery: fields, properties, persons and functions', async (t) => {
  t.same(
    await results(
      "select properties.$browser, properties['price'], properties.nested.k from events where event = 'signup' order " +
        'by timestamp',
    ),
    [
      ['Chrome', '12', 'v'],
      ['Firefox', '7.5', null],
    ],
  );
  t.same(
    await results(
      'select person.properties.plan, count() from events group by 1 order by 1 nulls'.replace(' nulls', ''),
    ),
    [
      ['free', 1],
      ['pro', 2],
      [null, 1],
    ],
  );
  t.same(
    await results(
      'select sum(properties.price), avg(properties.price), max(properties.price), min(timestamp) from events',
    ),
    [[19.5, 9.75, 'n/a', '2024-05-01T10:00:00.000000Z']],
  );
  t.same(await results('select properties.price > 10, properties.price * 2 from events order by timestamp limit 3'), [
    [true, 24],
    [false, 15],
    [null, null],
  ]);
  t.same(
    await results(
      'select toDate(timestamp) as d, toStartOfDay(timestamp), toStartOfHour(timestamp), toStartOfMonth(timestamp), ' +
        "toStartOfWeek(timestamp) from events where event = 'signup' and properties.$browser = 'Firefox'",
    ),
    [['2024-05-01', '2024-05-01T00:00:00.000000Z', '2024-05-01T11:00:00.000000Z', '2024-05-01', '2024-04-28']],
  );
  t.same(await results("select uniq(distinct_id), countIf(event = 'signup'), count(distinct person_id) from events"), [
    [4, 2, 2],
  ]);
  t.same(
    await results(
      "select count() from events where timestamp > toDateTime('2024-05-01 11:00:00') - interval 1 hour and " +
        'timestamp < now()',
    ),
    [[3]],
  );
  t.same(
    await results(
      "select if(properties.$browser = 'Chrome', 'c', 'other') as b, coalesce(properties.$session_id, 'none') from " +
        'events order by timestamp',
    ),
    [
      ['c', 'none'],
      ['other', 'none'],
      ['c', 's1'],
      ['other', 'none'],
    ],
  );
  t.same(
    await results(
      "select event from events where distinct_id in ('ann', 'bob') and event like 'sign%' and not (event ilike " +
        "'X%') order by timestamp",
    ),
    [['signup'], ['signup']],
  );
  t.same(
    await results(
      "select JSONExtractString(properties, 'nested', 'k'), JSONExtractInt(properties, 'price') from events order by " +
        'timestamp limit 1',
    ),
    [['v', 12]],
  );
  t.same(await results('select 1 + 2, 7 / 2, 5 % 3, 1 / 0, -(2)'), [[3, 3.5, 2, null, -2]]);
  t.same(await results('select count(), countIf(properties.$browser is null) from events having count() > 1'), [
    [4, 1],
  ]);
  const joined = await hogql(
    'select e.event, p.properties.email from events e join persons p on e.person_id = p.id where p.properties.plan = ' +
      "'pro' order by e.timestamp",
  );
  t.same(joined.body.columns, ['event', 'p.properties.email'], 'fields are named as PostHog names them');
  t.same(joined.body.results, [
    ['signup', 'ann@x.io'],
    ['$pageview', 'ann@x.io'],
  ]);
  t.same(
    await results(
      'select d.distinct_id, p.id = d.person_id from person_distinct_ids d left join persons p on p.id = d.person_id ' +
        'order by 1',
    ),
    [
      ['ann', true],
      ['ann-2', true],
      ['bob', true],
    ],
  );
  t.same(
    await results(
      'select n, c from (select event as n, count() as c from events group by event) where c > 1 order by n desc',
    ),
    [
      ['signup', 2],
      ['$pageview', 2],
    ],
  );
  t.same(
    await results(
      'select count() from events where person_id in (select id from persons where properties.plan = {plan})',
      { values: { plan: 'pro' } },
    ),
    [[2]],
  );
  t.same(
    await results('select count() from events where distinct_id in {ids} and properties.price > {min}', {
      values: { ids: ['ann', 'bob'], min: 10 },
    }),
    [[1]],
  );
  const star = await hogql("select * from events where event = 'signup' order by timestamp limit 1");
  t.same(star.body.columns, [
    'uuid',
    'event',
    'properties',
    'timestamp',
    'distinct_id',
    'elements_chain',
    'created_at',
    'person_id',
  ]);
  t.same(star.body.results[0].slice(0, 5), [
    rows[0]!.uuid,
    'signup',
    JSON.stringify({ price: 12, nested: { k: 'v' }, $browser: 'Chrome' }).length ? star.body.results[0][2] : '',
    '2024-05-01T10:00:00.000000Z',
    'ann',
  ]);
  t.same(
    JSON.parse(star.body.results[0][2]),
    { price: 12, nested: { k: 'v' }, $browser: 'Chrome' },
    'properties as JSON text',
  );
  t.equal(star.body.results[0][7], ann.uuid, 'person_id is the person uuid');
  t.same(
    star.body.types.map((x: string[]) => x[1]),
    ['UUID', 'String', 'String', "DateTime64(6, 'UTC')", 'String', 'String', "DateTime64(6, 'UTC')", 'UUID'],
  );
});

t.test('limits, offset and hasMore', async (t) => {
  const page = await hogql('select event from events order by timestamp limit 2 offset 1');
  t.same(
    [page.body.results, page.body.hasMore, page.body.limit, page.body.offset],
    [[['signup'], ['$pageview']], true, 2, 1],
  );
  const last = await hogql('select event from events order by timestamp limit 2 offset 3');
  t.same([last.body.results.length, last.body.hasMore], [1, false]);
  const big = await hogql('select event from events limit 1000000');
  t.same([big.status, big.body.limit], [200, 50000], 'clamped to PostHog maximum (MAX_SELECT_RETURNED_ROWS)');
  t.match(big.body.hogql, /LIMIT 50000$/);
});

t.test('EventsQuery', async (t) => {
  const events = (query: Record<string, unknown>) =>
    call('query_create', { key: a.key, params, body: { query: { kind: 'EventsQuery', ...query } } });
  const res = await events({
    select: ['*', 'event', 'properties.$browser -- Browser', 'person'],
    where: ["event = 'signup'"],
    orderBy: ['timestamp ASC'],
  });
  t.equal(res.status, 200);
  t.same(res.body.columns, ['*', 'event', 'properties.$browser -- Browser', 'person']);
  t.equal(res.body.types[1], 'String');
  t.equal(res.body.results.length, 2);
  const [first] = res.body.results as unknown as [unknown[]];
  t.match(first[0], {
    uuid: rows[0]!.uuid,
    event: 'signup',
    distinct_id: 'ann',
    properties: { $browser: 'Chrome' },
    timestamp: '2024-05-01T10:00:00.000000Z',
    team_id: a.project.id,
  });
  t.same(first.slice(1, 3), ['signup', 'Chrome']);
  t.match(first[3], { id: ann.uuid, properties: { plan: 'pro' }, distinct_id: 'ann' });
  const filtered = await events({
    select: ['event', 'distinct_id'],
    event: '$pageview',
    after: '2024-05-02T00:00:00Z',
    properties: [{ key: '$browser', value: 'chrome', operator: 'icontains', type: 'event' }],
  });
  t.same(filtered.body.results, [['$pageview', 'ann-2']]);
  const persons = await events({
    select: ['distinct_id'],
    properties: [{ key: 'plan', value: ['pro'], type: 'person' }],
    orderBy: ['distinct_id'],
  });
  t.same(persons.body.results, [['ann'], ['ann-2']]);
  const grouped = await events({
    select: ['event', 'count()'],
    orderBy: ['count() DESC', 'event'],
    before: '2024-05-03T00:00:00Z',
  });
  t.same(grouped.body.results, [
    ['signup', 2],
    ['$pageview', 1],
  ]);
  t.same(grouped.body.types, ['String', 'UInt64']);
  const paged = await events({ select: ['event'], limit: 1, offset: 1 });
  t.same([paged.body.results, paged.body.hasMore], [[['$pageview']], true], 'newest first by default');
  const person = await events({ select: ['event'], personId: bob.uuid });
  t.same(person.body.results, [['signup']]);
  const bad = await events({ select: ['event'], where: ['nope = 1'] });
  t.same([bad.status, bad.body.attr], [400, null]);
  t.match(bad.body.detail, /Unable to resolve field: nope/);
  const noSelect = await call('query_create', { key: a.key, params, body: { query: { kind: 'EventsQuery' } } });
  t.same([noSelect.status, noSelect.body.attr, noSelect.body.code], [400, 'query__select', 'required']);
  const badAfter = await events({ select: ['event'], after: 'yesterday-ish' });
  t.same([badAfter.status, badAfter.body.attr], [400, 'after']);
  const badFilter = await events({ select: ['event'], properties: [{ key: 'x', operator: 'nope', value: 1 }] });
  t.same([badFilter.status, badFilter.body.attr], [400, 'properties']);
});

t.test('bad queries are 400s in PostHog error shape', async (t) => {
  const cases: [string, RegExp][] = [
    ['selec event from events', /^Syntax error at line 1, column 1: /],
    // PostHog's parser's own words, after where it stopped.
    ['select event from events where', /^Syntax error at line 1, column 31: no viable alternative at input/],
    ['select event,\n  count( from events', /^Syntax error at line 2, column 15: no viable alternative at input/],
    ['select event from events; drop table events', /^Syntax error at line 1, column 27: mismatched input 'drop'/],
    ['select * from users', /^Unknown table "users"/],
    ['select * from pg_catalog.pg_tables', /^The table name pg_catalog.pg_tables is not supported/],
    ['select * from "public.events"', /^Unknown table/],
    ['select pg_sleep(10)', /^Unsupported function call 'pg_sleep\(...\)'/],
    ['select version()', /^Unsupported function call 'version\(...\)'/],
    ['select project_id from events', /^Unable to resolve field: project_id/],
    ['select nope.event from events', /^Unable to resolve field: nope.event/],
    ['select created_at from events, persons', /^Ambiguous field: created_at/],
    ['select count(event, event) from events', /^Function 'count' expects 0 to 1 arguments, found 2/],
    ['select event, count() from events', /GROUP BY/],
    ["select count() from events where match(event, '(')", /^Query failed: invalid regular expression/],
    ["select count() from events where timestamp > 'soon'", /^Cannot convert "soon" to a date-time/],
    ['select {missing}', /^Placeholder \{missing\} is not available/],
    ['select 1 union all select 2, 3', /^The queries of a UNION ALL must select the same number of columns/],
    ['with x as (select 1 as a) select * from x, x', /^Table alias "x" is used twice/],
    ['with x as (select * from x) select * from x', /^Unknown table "x"/],
    ['select count() * 9007199254740991 * 9007199254740991 from events', /^Query failed: bigint out of range/],
    ['select 1e999', /^Number out of range/],
    ['select event from events limit -1', /^LIMIT must be a whole number/],
    [`select ${'('.repeat(200)}1${')'.repeat(200)}`, /nested too deeply/],
    [
      `select 1 as a0, ${Array.from({ length: 30 }, (_, i) => `a${i} + a${i} as a${i + 1}`).join(', ')}`,
      /^Query is too complex/,
    ],
    [
      'select count() from events e join persons p on e.person_id = p.id where properties.plan = 1',
      /^Ambiguous field: properties.plan/,
    ],
    ['select * from events, events', /^Table alias "events" is used twice/],
  ];
  for (const [query, detail] of cases) {
    const res = await hogql(query);
    t.equal(res.status, 400, query);
    t.match(res.body, { type: 'validation_error', attr: null, detail }, query);
    // PostHog's codes (posthog/hogql/errors.py): a text that does not parse, or a query that cannot run.
    if (res.body.code !== 'invalid_input')
      t.equal(res.body.code, /^Syntax error/.test(res.body.detail) ? 'hogql_syntax_error' : 'hogql_query_error', query);
  }
  t.same(await results('select 99999999999999999999 * 99999999999999999999'), [[1e40]], 'big numbers are numeric');
  const many = await hogql(
    'select count() from events where distinct_id in {a} or distinct_id in {b} or distinct_id in {c} or distinct_id ' +
      'in {d}',
    {
      values: Object.fromEntries(
        ['a', 'b', 'c', 'd'].map((k) => [k, Array.from({ length: 9000 }, (_, i) => `${k}${i}`)]),
      ),
    },
  );
  t.match(
    [many.status, many.body.detail],
    [400, /^Query is too complex/],
    'lists cannot exceed what a statement binds',
  );
  const nul = await hogql("select 'a\u0000b'");
  t.same([nul.status, nul.body.attr], [400, 'query__query'], 'NUL characters are refused');
  const nulValue = await hogql('select {v}', { values: { v: 'a\u0000b' } });
  t.equal(nulValue.status, 400, 'also in values');
  const blank = await hogql('  ');
  t.same([blank.status, blank.body.attr], [400, 'query__query']);
  const kind = await call('query_create', { key: a.key, params, body: { query: { kind: 'WebOverviewQuery' } } });
  t.same([kind.status, kind.body.attr], [400, 'query__kind']);
});

t.test('statement timeout answers a clear error', async (t) => {
  const config = ctx.app.config;
  const saved = config.queryTimeoutSeconds;
  config.queryTimeoutSeconds = 0.05;
  t.teardown(() => {
    config.queryTimeoutSeconds = saved;
  });
  const res = await hogql(
    'select count() from events a, events b, events c, events d, events e, events f, events g, events h, events i, ' +
      'events j, events k, events l',
  );
  t.equal(res.status, 400);
  t.match(res.body, { type: 'validation_error', code: 'timeout_exceeded', detail: /time limit of 0.05 seconds/ });
  config.queryTimeoutSeconds = saved;
  t.equal((await hogql('select count() from events')).status, 200, 'the next query runs');
});

t.test('auth and tenancy', async (t) => {
  const body = { query: { kind: 'HogQLQuery', query: 'select count() from events' } };
  t.equal((await call('query_create', { params, body })).status, 401);
  const noScope = await makeKey(db, a.user, ['event_definition:read']);
  t.same(
    (await call('query_create', { key: noScope, params, body })).body.detail,
    "API key missing required scope 'query:read'",
  );
  const reader = await makeKey(db, a.user, ['query:read']);
  t.equal((await call('query_create', { key: reader, params, body })).status, 200);
  const other = await call('query_create', { key: b.key, params, body });
  t.same([other.status, other.body.detail], [403, "You don't have access to the project."]);
  const otherEnv = await call('environments_query_create', { key: b.key, params, body });
  t.equal(otherEnv.status, 403);
  const member = await makeMember(db, a, 1, ['query:read']);
  t.same((await call('query_create', { key: member.key, params, body })).body.results, [[4]], 'any member may query');
  const scoped = await makeKey(db, a.user, ['query:read'], { scoped_teams: [b.project.id] });
  t.equal((await call('query_create', { key: scoped, params, body })).status, 403);
  t.equal((await call('query_create', { key: a.key, params: { project_id: 999999 }, body })).status, 404);
  const sibling = await makeProject(db, a);
  t.same(
    (await call('query_create', { key: a.key, params: { project_id: sibling.id }, body })).body.results,
    [[0]],
    'a sibling project has its own rows',
  );
});

t.test('no query reads another project', async (t) => {
  const attempts = [
    `select count() from events where team_id = ${b.project.id}`,
    "select count() from events where event = 'secret'",
    "select count() from persons where properties.plan = 'secret'",
    "select count() from person_distinct_ids where distinct_id = 'zed'",
    "select count() from events e full join persons p on p.id = e.person_id where p.properties.plan = 'secret' or " +
      "e.event = 'secret'",
    "select count() from (select * from events) where event = 'secret'",
    "select count() from events where person_id in (select id from persons where properties.plan = 'secret')",
  ];
  for (const q of attempts) t.same(await results(q), [[0]], q);
  const seen = (await results('select distinct event from events order by event')).flat();
  t.same(seen, ['$pageview', 'signup']);
  t.same(await results('select distinct team_id from events'), [[a.project.id]]);
});

t.test('queries run in a read-only transaction', async (t) => {
  const write = await runReadOnly(db, sql`create temp table query_write_check (x int)`, 5000).catch(
    (err: unknown) => err,
  );
  t.equal(sqlState(write), '25006', 'a write is refused by PostgreSQL itself');
  t.same(await runReadOnly(db, sql`select json_build_array(current_setting('transaction_read_only')) as r`, 5000), [
    ['on'],
  ]);
});

t.test("timings: PostHog's {k, t} list of the pipeline steps, the whole query last", async (t) => {
  const res = await hogql('select event, count() from events group by event');
  t.equal(res.status, 200);
  const keys = res.body.timings.map((x: { k: string }) => x.k);
  t.same(keys, ['./parse', './compile', './execute', './serialise', '.'], 'each step once, in order');
  const whole = res.body.timings.at(-1).t;
  for (const { k, t: seconds } of res.body.timings)
    t.ok(seconds >= 0 && seconds <= whole, `${k}: ${seconds}s within the whole ${whole}s`);
  t.ok(whole < 30, 'in seconds, not milliseconds');
  const events = await call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'EventsQuery', select: ['event'] } },
  });
  t.same(
    events.body.timings.map((x: { k: string }) => x.k),
    keys,
    'an EventsQuery reports the same steps',
  );
});
