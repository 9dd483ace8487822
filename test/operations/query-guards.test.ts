import t from 'tap';
import { sql } from 'drizzle-orm';
import { runReadOnly } from '../../src/query/queries.js';
import { sqlState } from '../../src/core/sql-state.js';
import { makeKey, makeMember, makeProject } from '../helpers/factories.js';
import { queryFixture } from './query-fixture.js';

const { ctx, call, db, a, b, params, rows, hogql, results } = await queryFixture(t);

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
