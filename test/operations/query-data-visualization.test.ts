// DataVisualizationNode (PostHog's SQL chart, and what its agent toolkit sends as SQL): PostHog runs a
// node it has no runner for as its `source`, so the answer is the HogQLQuery's, on both route families,
// synchronous and asynchronous.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const params = { project_id: a.project.id };
await insertEvents(db, a.project.id, [
  { event: 'signup', distinct_id: 'u1' },
  { event: 'signup', distinct_id: 'u2' },
  { event: '$pageview', distinct_id: 'u1' },
]);
await insertEvents(db, b.project.id, [{ event: 'secret', distinct_id: 'z' }]);

const COUNT = 'select event, count() as n from events group by event order by event';
const chart = (query: string, extra: Record<string, unknown> = {}) => ({
  kind: 'DataVisualizationNode',
  source: { kind: 'HogQLQuery', query, ...extra },
  display: 'ActionsTable',
  chartSettings: { goalLines: [] },
});

t.test('answers as its HogQLQuery source, on projects and environments', async (t) => {
  const plain = await call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'HogQLQuery', query: COUNT } },
  });
  t.equal(plain.status, 200);
  for (const route of ['query_create', 'environments_query_create'] as const) {
    const res = await call(route, { key: a.key, params, body: { query: chart(COUNT) as never } });
    t.equal(res.status, 200, route);
    t.same(res.body.results, [
      ['$pageview', 1],
      ['signup', 2],
    ]);
    t.same(res.body.columns, ['event', 'n']);
    t.same(res.body.types, [
      ['event', 'String'],
      ['n', 'UInt64'],
    ]);
    t.equal(res.body.query, COUNT, 'the source query, as PostHog echoes it');
    const { timings: _a, ...same } = res.body;
    const { timings: _b, ...expected } = plain.body;
    // The chart runs its source, so it is served the source's cached answer.
    t.same(same, { ...expected, is_cached: true }, `${route}: the HogQLQuery's answer, from the cache`);
  }
  const values = await call('query_create', {
    key: a.key,
    params,
    body: { query: chart('select count() from events where event = {e}', { values: { e: 'signup' } }) as never },
  });
  t.same(values.body.results, [[2]], "the source's values fill its placeholders");
});

t.test('asynchronous, on both route families', async (t) => {
  for (const [create, retrieve] of [
    ['query_create', 'query_retrieve'],
    ['environments_query_create', 'environments_query_retrieve'],
  ] as const) {
    const started = await call(create, {
      key: a.key,
      params,
      body: { query: chart(COUNT) as never, refresh: 'force_async', client_query_id: `chart-${create}` },
    });
    t.equal(started.status, 202, create);
    let res = await call(retrieve, { key: a.key, params: { ...params, id: `chart-${create}` } });
    for (let i = 0; res.status === 202 && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 25));
      res = await call(retrieve, { key: a.key, params: { ...params, id: `chart-${create}` } });
    }
    t.equal(res.status, 200);
    t.same((res.body.query_status.results as { results: unknown }).results, [
      ['$pageview', 1],
      ['signup', 2],
    ]);
  }
});

t.test('a chart without a usable source is a 400 naming the field', async (t) => {
  const none = await call('query_create', { key: a.key, params, body: { query: { kind: 'DataVisualizationNode' } } });
  t.same([none.status, none.body.attr, none.body.code], [400, 'query__source', 'required']);
  const blank = await call('query_create', { key: a.key, params, body: { query: chart('  ') as never } });
  t.same([blank.status, blank.body.attr, blank.body.code], [400, 'query__source__query', 'blank']);
  const kind = await call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'DataVisualizationNode', source: { kind: 'TrendsQuery' } } as never },
  });
  t.same([kind.status, kind.body.attr], [400, 'query__source__kind']);
  const bad = await call('query_create', {
    key: a.key,
    params,
    body: { query: chart('select nope from events') as never },
  });
  t.equal(bad.status, 400, 'a bad source query is the same 400 as a HogQLQuery');
  t.equal(bad.body.type, 'validation_error');
});

t.test("another project's rows never come back through a chart", async (t) => {
  const res = await call('query_create', {
    key: a.key,
    params,
    body: { query: chart("select count() from events where event = 'secret'") as never },
  });
  t.same(res.body.results, [[0]]);
});
