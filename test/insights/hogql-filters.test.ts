// HogQL queries take filters and variables as PostHog's do: `{filters}` and `{filters.dateRange.*}` from
// the query's HogQLFilters (naive dates in the project's timezone), `{variables.<code_name>}`, the Query
// API's filters_override / variables_override, and a dashboard's filters and variables (or the read's
// overrides) on its SQL insights. Counts are worked out by hand from the events below.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { filterDate } from '../../src/query/hogql-filters.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
// The same events in a project whose timezone is New York (UTC-4 in May).
const ny = await makeTenant(db);
await db.execute(sql`update projects set timezone = 'America/New_York' where id = ${ny.project.id}`);
const at = (s: string) => new Date(`${s}Z`);
const EVENTS = [
  { event: '$pageview', timestamp: at('2024-05-01T10:00:00'), properties: { $browser: 'Chrome' } },
  { event: '$pageview', timestamp: at('2024-05-01T11:00:00'), properties: { $browser: 'Firefox' } },
  { event: '$pageview', timestamp: at('2024-05-02T09:00:00'), properties: { $browser: 'Chrome' } },
  { event: 'signup', timestamp: at('2024-05-03T02:00:00'), properties: { $browser: 'Chrome' } },
];
await insertEvents(db, a.project.id, EVENTS);
await insertEvents(db, ny.project.id, EVENTS);
const params = { project_id: a.project.id };
const CHROME = [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }];
const WHERE_FILTERS = 'select count() from events where {filters}';
const BY_VARIABLE = 'select count() from events where properties.$browser = {variables.browser}';
const variable = (value: string) => ({ v1: { variableId: 'v1', code_name: 'browser', value } });

const hogql = (query: string, node: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, tenant = a) =>
  call('query_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { query: { kind: 'HogQLQuery', query, ...node } as never, ...extra },
  });
const count = async (res: Awaited<ReturnType<typeof hogql>>) => {
  if (res.status !== 200) throw new Error(`${res.status} ${res.raw.slice(0, 300)}`);
  return (res.body.results as number[][])[0]![0];
};

t.test('{filters}: the date range and properties of the query', async (t) => {
  t.equal(await count(await hogql(WHERE_FILTERS)), 4, 'no filters: every event');
  const may1 = { dateRange: { date_from: '2024-05-01', date_to: '2024-05-02' } };
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: may1 })), 2, 'May 1: two');
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: { ...may1, properties: CHROME } })), 1, 'Chrome on May 1');
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: { dateRange: { date_from: 'all' } } })), 4, 'all');
  const bounds =
    'select count() from events where timestamp >= {filters.dateRange.from} and timestamp < {filters.dateRange.to}';
  const from2 = { dateRange: { date_from: '2024-05-02' } };
  t.equal(await count(await hogql(bounds, { filters: from2 })), 2, 'an unset bound holds for every row');
  const window = { dateRange: { date_from: '2024-05-01T10:30:00Z', date_to: '2024-05-02T09:00:00Z' } };
  t.equal(await count(await hogql(bounds, { filters: window })), 1, 'date-times with an offset, to excluded');
  const recent = await hogql(WHERE_FILTERS, { filters: { dateRange: { date_from: '-7d' } } });
  t.equal(await count(recent), 0, 'relative: nothing in the last week (the events are from 2024)');
});

t.test('relative dates, from a fixed now, as PostHog reads them', async (t) => {
  // 2024-05-15 is a Wednesday; 14:30 UTC is 10:30 in New York.
  const now = new Date('2024-05-15T14:30:45.123Z');
  const read = (text: string, zone = 'UTC') => filterDate(text, zone, now).toISOString();
  t.equal(read('-24h'), '2024-05-14T14:30:45.123Z', 'hours: exact');
  t.equal(read('-30M'), '2024-05-15T14:00:45.123Z', 'minutes: exact');
  t.equal(read('-7d'), '2024-05-08T00:00:00.000Z', 'days: from the start of the day');
  t.equal(read('-7d', 'America/New_York'), '2024-05-08T04:00:00.000Z', "the project's day");
  t.equal(read('dStart'), '2024-05-15T00:00:00.000Z');
  t.equal(read('-1dEnd'), '2024-05-14T23:59:59.999Z');
  t.equal(read('wStart'), '2024-05-12T00:00:00.000Z', 'weeks start on Sunday');
  t.equal(read('mStart'), '2024-05-01T00:00:00.000Z');
  t.equal(read('-1mStart'), '2024-04-01T00:00:00.000Z');
  t.equal(read('yStart'), '2024-01-01T00:00:00.000Z');
  t.equal(read('2024-05-01', 'America/New_York'), '2024-05-01T04:00:00.000Z', 'a naive date in the zone');
  t.equal(read('2024-05-01T10:00:00+02:00', 'America/New_York'), '2024-05-01T08:00:00.000Z', 'an offset is kept');
});

t.test("naive dates are in the project's timezone", async (t) => {
  const may2 = { dateRange: { date_from: '2024-05-02', date_to: '2024-05-03' } };
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: may2 })), 1, 'UTC: 09:00 on May 2');
  const inNy = await hogql(WHERE_FILTERS, { filters: may2 }, {}, ny);
  t.equal(await count(inNy), 2, "New York's May 2 also holds 02:00 UTC on May 3");
  t.equal(inNy.body.timezone, 'America/New_York');
});

t.test('{variables.<code_name>}', async (t) => {
  t.equal(await count(await hogql(BY_VARIABLE, { variables: variable('Chrome') })), 3);
  t.equal(await count(await hogql(BY_VARIABLE, { variables: variable('Firefox') })), 1);
});

t.test('filters_override and variables_override, each its own cache entry', async (t) => {
  const plain = await hogql(WHERE_FILTERS);
  const range = { date_from: '2024-05-01', date_to: '2024-05-03' };
  const over = await hogql(WHERE_FILTERS, {}, { filters_override: range });
  t.equal(await count(over), 3);
  t.equal(over.body.is_cached, false, 'not the plain query’s answer');
  t.not(over.body.cache_key, plain.body.cache_key);
  const same = await hogql(WHERE_FILTERS, { filters: { dateRange: range } });
  t.same([same.body.is_cached, same.body.cache_key], [true, over.body.cache_key], 'keyed by the query as it runs');
  const props = await hogql(WHERE_FILTERS, {}, { filters_override: { properties: CHROME } });
  t.equal(await count(props), 3, 'properties only: the Chrome events of every day');
  const v = await hogql(BY_VARIABLE, { variables: variable('Chrome') }, { variables_override: variable('Firefox') });
  t.equal(await count(v), 1, 'the override replaces the value of the same variable');
  const unknown = await hogql(BY_VARIABLE, { variables: variable('Chrome') }, { variables_override: { v2: {} } });
  t.equal(await count(unknown), 3, 'an override of a variable the query does not have changes nothing');
});

t.test('bad filters are 400s in PostHog’s shape', async (t) => {
  const persons = await hogql('select count() from persons where {filters}');
  t.match(persons.body, { type: 'validation_error', detail: /does not select from the events/ });
  const unknown = await hogql('select count() from events where {filters.nope}');
  t.match(unknown.body, { type: 'validation_error', detail: /Unsupported filters placeholder/ });
  const date = await hogql(WHERE_FILTERS, { filters: { dateRange: { date_from: 'soon' } } });
  t.match(date.body, { type: 'validation_error', detail: /is not a date/ });
  const missing = await hogql('select {variables.nope} from events');
  t.match(missing.body, { type: 'validation_error', detail: /variables\.nope/ });
});

t.test("a dashboard's filters and variables apply to its SQL insights", async (t) => {
  const d = json<'dashboards_create'>(
    await call('dashboards_create', {
      key: a.key,
      params,
      body: { name: 'SQL', filters: { date_from: '2024-05-01', date_to: '2024-05-02', properties: CHROME } },
    }),
  );
  const make = async (name: string, source: Record<string, unknown>) =>
    json<'insights_create'>(
      await call('insights_create', {
        key: a.key,
        params,
        body: { name, query: { kind: 'DataVisualizationNode', source } as never, dashboards: [d.id] },
      }),
    );
  const filtered = await make('Filtered', { kind: 'HogQLQuery', query: WHERE_FILTERS });
  const byVariable = await make('By variable', {
    kind: 'HogQLQuery',
    query: BY_VARIABLE,
    variables: variable('Chrome'),
  });
  const results = async (query: Record<string, string> = {}) => {
    const res = await call('dashboards_retrieve', {
      key: a.key,
      params: { ...params, id: d.id },
      query: { refresh: 'blocking', ...query },
    });
    t.equal(res.status, 200, res.raw.slice(0, 200));
    const tiles = res.body.tiles as unknown as { insight: { id: number; result: number[][]; query: any } }[];
    return new Map(tiles.map((x) => [x.insight.id, x.insight]));
  };
  const shown = await results();
  t.same(shown.get(filtered.id)!.result, [[1]], 'Chrome on May 1');
  t.same(shown.get(filtered.id)!.query.source.filters, {
    dateRange: { date_from: '2024-05-01', date_to: '2024-05-02' },
    properties: CHROME,
  });
  t.same(shown.get(byVariable.id)!.result, [[3]], "the insight's own variable value");
  const alone = await call('insights_retrieve', {
    key: a.key,
    params: { ...params, id: filtered.id },
    query: { refresh: 'blocking' },
  });
  t.same(alone.body.result, [[4]], 'outside the dashboard: no filters');

  const over = await results({ filters_override: JSON.stringify({ date_from: '2024-05-02' }) });
  t.same(over.get(filtered.id)!.result, [[2]], "the override instead of the dashboard's filters");
  const patched = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { variables: variable('Firefox') },
  });
  t.equal(patched.status, 200);
  t.same((await results()).get(byVariable.id)!.result, [[1]], "the dashboard's variable value");
  const vo = await results({ variables_override: JSON.stringify(variable('Chrome')) });
  t.same(vo.get(byVariable.id)!.result, [[3]], 'the override instead of the dashboard’s value');
});

t.test("filterTestAccounts: the project's test account filters, from the query or a dashboard", async (t) => {
  const setTestFilters = (filters: unknown[]) =>
    db.execute(sql`update projects set test_account_filters = ${JSON.stringify(filters)}::jsonb
      where id = ${a.project.id}`);
  const NOT_FIREFOX = { key: '$browser', value: 'Firefox', operator: 'is_not', type: 'event' };
  await setTestFilters([NOT_FIREFOX]);
  t.teardown(() => setTestFilters([]));
  const forced = { refresh: 'force_blocking' };
  const on = { filterTestAccounts: true };
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: on }, forced)), 3, 'the Firefox pageview left out');
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: { filterTestAccounts: false } }, forced)), 4);
  const may1 = { dateRange: { date_from: '2024-05-01', date_to: '2024-05-02' }, ...on };
  t.equal(
    await count(await hogql(WHERE_FILTERS, { filters: may1 }, forced)),
    1,
    'with the date range: Chrome on May 1',
  );
  await setTestFilters([NOT_FIREFOX, { key: '$browser', value: 'Safari', operator: 'is_not', type: 'event' }]);
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: on }, forced)), 3, 'each filter joins the conditions');
  await setTestFilters([NOT_FIREFOX]);

  const dashboard = async (filters: Record<string, unknown>) =>
    json<'dashboards_create'>(await call('dashboards_create', { key: a.key, params, body: { name: 'T', filters } }));
  const d = await dashboard({ filterTestAccounts: true });
  const plain = await dashboard({});
  const insight = async (name: string, query: Record<string, unknown>) =>
    json<'insights_create'>(
      await call('insights_create', {
        key: a.key,
        params,
        body: { name, query: query as never, dashboards: [d.id, plain.id] },
      }),
    ).id;
  const sqlOwn = (filters: Record<string, unknown> | undefined) => ({
    kind: 'DataVisualizationNode',
    source: { kind: 'HogQLQuery', query: WHERE_FILTERS, ...(filters ? { filters } : {}) },
  });
  const bare = await insight('Bare', sqlOwn(undefined));
  const own = await insight('Own', sqlOwn(on));
  const trends = await insight('Trends', {
    kind: 'InsightVizNode',
    source: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: '$pageview' }],
      dateRange: { date_from: '2024-05-01', date_to: '2024-05-03' },
    },
  });
  const results = async (id: number, query: Record<string, string> = {}) => {
    const res = await call('dashboards_retrieve', {
      key: a.key,
      params: { ...params, id },
      query: { refresh: 'blocking', ...query },
    });
    t.equal(res.status, 200, res.raw.slice(0, 200));
    const tiles = res.body.tiles as unknown as { insight: { id: number; result: unknown } }[];
    return new Map(tiles.map((x) => [x.insight.id, x.insight.result]));
  };
  const onD = await results(d.id);
  t.same(onD.get(bare), [[3]], "the dashboard's filterTestAccounts on a SQL insight");
  t.same((onD.get(trends) as { data: number[] }[])[0]!.data, [1, 1, 0], 'and on a trends insight: May 1 loses one');
  const onPlain = await results(plain.id);
  t.same(onPlain.get(bare), [[4]], 'a dashboard without the setting: every event');
  t.same(onPlain.get(own), [[3]], "unset on the dashboard: the insight's own setting holds");
  t.same((onPlain.get(trends) as { data: number[] }[])[0]!.data, [2, 1, 0]);
  const off = await results(plain.id, { filters_override: JSON.stringify({ filterTestAccounts: false }) });
  t.same(off.get(own), [[4]], "false on the dashboard's filters overrides the insight's true");
  // Last: the answer computed here is cached under the same key as the ones above.
  await setTestFilters([{ key: '$browser', value: 'Chrome', operator: 'is_not', type: 'event' }]);
  t.equal(await count(await hogql(WHERE_FILTERS, { filters: on }, forced)), 1, "read when the query runs: Firefox's");
});
