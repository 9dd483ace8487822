// TrendsQuery on a small known data set, captured through the real endpoint: every expected number is
// worked out by hand below from the events listed here.
import { sql } from 'drizzle-orm';
import t, { type Test } from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { capture } from '../helpers/events.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import { posthogValidator } from './posthog-schema.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const params = { project_id: a.project.id };

// Project A, UTC. u1 is "pro"; anon-2 and u2 start as two persons and merge when u2 identifies
// (second batch); u3 has no plan. Local New York times (UTC-4 in May) are noted for the timezone case.
const pv = (distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event: '$pageview',
  distinct_id,
  timestamp,
  properties,
});
const batch1 = [
  { event: '$identify', distinct_id: 'u1', timestamp: '2024-05-01T09:00:00Z', properties: { $set: { plan: 'pro' } } },
  pv('u1', '2024-04-30T23:00:00Z', { $browser: 'Chrome', price: 100, $session_id: 's0' }), // before the range
  pv('u1', '2024-05-01T10:00:00Z', { $browser: 'Chrome', price: 10, $session_id: 's1' }), // NY May 1 06:00
  pv('u1', '2024-05-01T11:00:00Z', { $browser: 'Chrome', price: 20, $session_id: 's1' }), // NY May 1 07:00
  pv('anon-2', '2024-05-02T09:00:00Z', { $browser: 'Firefox', price: 30, $session_id: 's2' }), // NY May 2 05:00
  { event: 'app_open', distinct_id: 'u2', timestamp: '2024-05-02T08:00:00Z', properties: {} },
];
const batch2 = [
  {
    event: '$identify',
    distinct_id: 'u2',
    timestamp: '2024-05-02T09:30:00Z',
    properties: { $anon_distinct_id: 'anon-2', $set: { plan: 'free' } },
  },
  pv('u2', '2024-05-02T15:00:00Z', { $browser: 'Firefox', price: 5, $session_id: 's2' }), // NY May 2 11:00
  pv('u2', '2024-05-03T23:30:00Z', { $browser: 'Firefox', price: '7', $session_id: 's3' }), // NY May 3 19:30
  pv('u3', '2024-05-04T02:00:00Z', { $browser: 'Safari', $session_id: 's4' }), // NY May 3 22:00
  { event: 'signup', distinct_id: 'u1', timestamp: '2024-05-05T12:00:00Z', properties: {} },
  pv('u1', '2024-05-08T00:30:00Z', { $browser: 'Chrome', $session_id: 's5' }), // after (UTC); NY May 7 20:30
];
await capture(ctx, a.project.api_token, batch1);
await capture(ctx, a.project.api_token, batch2);
// Project B: the same names on the same days, many times over; none may ever count in A.
await capture(
  ctx,
  b.project.api_token,
  [...batch1, ...batch2, ...batch1, ...batch2].map((e) => ({ ...e, distinct_id: `b-${e.distinct_id}` })),
);

const RANGE = { date_from: '2024-05-01', date_to: '2024-05-07' };
const DAYS = ['2024-05-01', '2024-05-02', '2024-05-03', '2024-05-04', '2024-05-05', '2024-05-06', '2024-05-07'];
const validate = posthogValidator('TrendsQueryResponse');

type Item = Record<string, any>;
async function trends(query: Record<string, unknown>, key = a.key, project_id = a.project.id) {
  return call('query_create', {
    key,
    params: { project_id },
    body: { query: { kind: 'TrendsQuery', dateRange: RANGE, ...query } as never },
  });
}
async function results(t: Test, query: Record<string, unknown>): Promise<Item[]> {
  const res = await trends(query);
  t.equal(res.status, 200, res.status === 200 ? 'answered' : JSON.stringify(res.body));
  if (validate && !validate(res.body)) t.fail(`not a PostHog TrendsQueryResponse: ${JSON.stringify(validate.errors)}`);
  return (res.body as { results: Item[] }).results;
}
const one = (math: string, extra: Record<string, unknown> = {}) => ({
  series: [{ kind: 'EventsNode', event: '$pageview', math, ...extra }],
});

t.test('daily total, zero-filled, with PostHog labels, days and action', async (t) => {
  const [r, ...rest] = await results(t, one('total'));
  t.equal(rest.length, 0);
  t.same(r!.data, [2, 2, 1, 1, 0, 0, 0]);
  t.equal(r!.count, 6);
  t.same(r!.days, DAYS);
  t.same(r!.labels, ['1-May-2024', '2-May-2024', '3-May-2024', '4-May-2024', '5-May-2024', '6-May-2024', '7-May-2024']);
  t.equal(r!.label, '$pageview');
  t.match(r!.action, { id: '$pageview', type: 'events', order: 0, name: '$pageview', math: 'total' });
  t.same(r!.action.days[0], '2024-05-01T00:00:00Z');
  t.match(r!.filter, { insight: 'TRENDS', date_from: '2024-05-01T00:00:00Z', entity_type: 'events' });
});

t.test('person math counts merged persons once', async (t) => {
  const [dau] = await results(t, one('dau'));
  // May 2: anon-2's and u2's pageviews are one person after the identify merged them.
  t.same(dau!.data, [1, 1, 1, 1, 0, 0, 0]);
  const [wau] = await results(t, one('weekly_active'));
  // Each day counts the persons seen in the 7 days ending with it: u1 (from Apr 30), u2 from May 2, u3 May 4.
  t.same(wau!.data, [1, 2, 2, 3, 3, 3, 3]);
  const [mau] = await results(t, one('monthly_active'));
  t.same(mau!.data, [1, 2, 2, 3, 3, 3, 3]);
  const [sessions] = await results(t, one('unique_session'));
  t.same(sessions!.data, [1, 1, 1, 1, 0, 0, 0]);
});

t.test('property math', async (t) => {
  const data = async (math: string) => (await results(t, one(math, { math_property: 'price' })))[0]!.data;
  // price by day: May 1 [10, 20]; May 2 [30, 5]; May 3 ["7"]; May 4 none (Safari has no price).
  t.same(await data('sum'), [30, 35, 7, 0, 0, 0, 0]);
  t.same(await data('avg'), [15, 17.5, 7, 0, 0, 0, 0]);
  t.same(await data('min'), [10, 5, 7, 0, 0, 0, 0]);
  t.same(await data('max'), [20, 30, 7, 0, 0, 0, 0]);
  t.same(await data('median'), [15, 17.5, 7, 0, 0, 0, 0]);
  t.same(await data('p90'), [19, 27.5, 7, 0, 0, 0, 0]);
});

t.test('several series, filters and all events', async (t) => {
  const res = await results(t, {
    series: [
      { kind: 'EventsNode', event: '$pageview', custom_name: 'Views' },
      { kind: 'EventsNode', event: 'signup' },
      { kind: 'EventsNode', event: null },
      {
        kind: 'EventsNode',
        event: '$pageview',
        properties: [{ key: '$browser', value: 'Firefox', operator: 'exact', type: 'event' }],
      },
    ],
    properties: [{ key: 'plan', value: 'pro', operator: 'is_not', type: 'person' }],
  });
  t.same(
    res.map((r) => r.label),
    ['$pageview', 'signup', 'All events', '$pageview'],
  );
  t.equal(res[0]!.action.custom_name, 'Views');
  // Without u1 (pro): anon-2/u2 and u3 only.
  t.same(res[0]!.data, [0, 2, 1, 1, 0, 0, 0]);
  t.same(res[1]!.data, [0, 0, 0, 0, 0, 0, 0]);
  // All events of u2 and u3: app_open and pageview on May 2, the identify too; May 3 and 4 a pageview each.
  t.same(res[2]!.data, [0, 4, 1, 1, 0, 0, 0]);
  t.same(res[3]!.data, [0, 2, 1, 0, 0, 0, 0]);
});

t.test('intervals: hour, minute, week, month', async (t) => {
  const [hour] = await results(t, {
    ...one('total'),
    interval: 'hour',
    dateRange: { date_from: '2024-05-01T10:00:00Z', date_to: '2024-05-01T12:00:00Z' },
  });
  t.same(hour!.data, [1, 1, 0]);
  t.same(hour!.days, ['2024-05-01 10:00:00', '2024-05-01 11:00:00', '2024-05-01 12:00:00']);
  t.same(hour!.labels, ['1-May-2024 10:00', '1-May-2024 11:00', '1-May-2024 12:00']);
  const [minute] = await results(t, {
    ...one('total'),
    interval: 'minute',
    dateRange: { date_from: '2024-05-01T10:59:00Z', date_to: '2024-05-01T11:01:00Z' },
  });
  t.same(minute!.data, [0, 1, 0]);
  t.same(minute!.days, ['2024-05-01 10:59:00', '2024-05-01 11:00:00', '2024-05-01 11:01:00']);
  // Weeks start on Sunday: Apr 28 holds May 1-4, May 5 holds nothing.
  const [week] = await results(t, { ...one('total'), interval: 'week' });
  t.same(week!.days, ['2024-04-28', '2024-05-05']);
  t.same(week!.data, [6, 0]);
  const [month] = await results(t, {
    ...one('total'),
    interval: 'month',
    dateRange: { date_from: '2024-04-01', date_to: '2024-05-31' },
  });
  t.same(month!.labels, ['Apr 2024', 'May 2024']);
  t.same(month!.data, [1, 7]);
});

t.test("buckets are days of the project's timezone", async (t) => {
  const other = await makeProject(db, a);
  await db.execute(sql`update projects set timezone = 'America/New_York' where id = ${other.id}`);
  await capture(ctx, other.api_token, [...batch1, ...batch2]);
  const res = await trends(one('total'), a.key, other.id);
  t.equal(res.status, 200);
  const [r] = (res.body as { results: Item[] }).results;
  // NY: May 1 06:00, 07:00; May 2 05:00, 11:00; May 3 19:30 and 22:00 (02:00 UTC May 4); May 7 20:30.
  t.same(r!.data, [2, 2, 2, 0, 0, 0, 1]);
  t.equal(r!.action.days[0], '2024-05-01T00:00:00-04:00');
  t.equal((res.body as any).resolved_date_range.date_from, '2024-05-01T00:00:00-04:00');
});

t.test('breakdowns: event and person property, limit and other', async (t) => {
  const byBrowser = await results(t, { ...one('total'), breakdownFilter: { breakdown: '$browser' } });
  t.same(
    byBrowser.map((r) => [r.breakdown_value, r.label, r.count]),
    [
      ['Firefox', 'Firefox', 3],
      ['Chrome', 'Chrome', 2],
      ['Safari', 'Safari', 1],
    ],
  );
  t.same(byBrowser[0]!.data, [0, 2, 1, 0, 0, 0, 0]);
  const limited = await trends({ ...one('total'), breakdownFilter: { breakdown: '$browser', breakdown_limit: 2 } });
  const body = limited.body as { results: Item[]; hasMore: boolean };
  t.same(
    body.results.map((r) => [r.breakdown_value, r.count]),
    [
      ['Firefox', 3],
      ['Chrome', 2],
      ['$$_posthog_breakdown_other_$$', 1],
    ],
  );
  t.equal(body.hasMore, true);
  const hidden = await results(t, {
    ...one('total'),
    breakdownFilter: { breakdown: '$browser', breakdown_limit: 2, breakdown_hide_other_aggregation: true },
  });
  t.same(
    hidden.map((r) => r.breakdown_value),
    ['Firefox', 'Chrome'],
  );
  const byPlan = await results(t, {
    ...one('dau'),
    breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' },
  });
  // free: the merged anon-2/u2 person (one a day on May 2 and 3); pro: u1; none: u3.
  t.same(
    byPlan.map((r) => [r.breakdown_value, r.data]),
    [
      ['free', [0, 1, 1, 0, 0, 0, 0]],
      ['pro', [1, 0, 0, 0, 0, 0, 0]],
      ['$$_posthog_breakdown_null_$$', [0, 0, 0, 1, 0, 0, 0]],
    ],
  );
  const two = await results(t, {
    series: [
      { kind: 'EventsNode', event: '$pageview' },
      { kind: 'EventsNode', event: 'signup' },
    ],
    breakdownFilter: { breakdown: '$browser' },
  });
  t.same(
    two.map((r) => r.label),
    ['$pageview - Firefox', '$pageview - Chrome', '$pageview - Safari', 'signup - $$_posthog_breakdown_null_$$'],
  );
});

t.test('compare with the previous period', async (t) => {
  const res = await results(t, { ...one('total'), compareFilter: { compare: true } });
  t.same(
    res.map((r) => [r.compare_label, r.compare, r.count]),
    [
      ['current', true, 6],
      ['previous', true, 1],
    ],
  );
  // The previous 7 days, Apr 24-30: u1's pageview on Apr 30.
  t.same(res[1]!.days, [
    '2024-04-24',
    '2024-04-25',
    '2024-04-26',
    '2024-04-27',
    '2024-04-28',
    '2024-04-29',
    '2024-04-30',
  ]);
  t.same(res[1]!.data, [0, 0, 0, 0, 0, 0, 1]);
  const shifted = await results(t, { ...one('total'), compareFilter: { compare: true, compare_to: '-1d' } });
  // May 1 moved back a day is Apr 30 - May 6: [1, 2, 2, 1, 1, 0, 0].
  t.same(shifted[1]!.data, [1, 2, 2, 1, 1, 0, 0]);
});

t.test('formulas', async (t) => {
  const series = [
    { kind: 'EventsNode', event: '$pageview' },
    { kind: 'EventsNode', event: 'signup' },
  ];
  const [f, ...rest] = await results(t, { series, trendsFilter: { formula: 'A * 2 - B' } });
  t.equal(rest.length, 0);
  t.equal(f!.label, 'Formula (A * 2 - B)');
  t.equal(f!.action, null);
  t.same(f!.data, [4, 4, 2, 2, -1, 0, 0]);
  t.equal(f!.count, 11);
  const [ratio] = await results(t, { series, trendsFilter: { formula: 'B / A' } });
  // Division by zero is 0, as PostHog's formula evaluation answers.
  t.same(ratio!.data, [0, 0, 0, 0, 0, 0, 0]);
  const compared = await results(t, { series, trendsFilter: { formula: 'A + B' }, compareFilter: { compare: true } });
  t.same(
    compared.map((r) => [r.compare_label, r.count]),
    [
      ['current', 7],
      ['previous', 1],
    ],
  );
  const broken = await results(t, {
    series,
    trendsFilter: { formula: 'A + B' },
    breakdownFilter: { breakdown: '$browser' },
  });
  t.same(
    broken.map((r) => [r.breakdown_value, r.count]),
    [
      ['Firefox', 3],
      ['Chrome', 2],
      ['Safari', 1],
      ['$$_posthog_breakdown_null_$$', 1],
    ],
  );
});

t.test('displays that change the answer', async (t) => {
  const [cumulative] = await results(t, { ...one('total'), trendsFilter: { display: 'ActionsLineGraphCumulative' } });
  t.same(cumulative!.data, [2, 4, 5, 6, 6, 6, 6]);
  t.equal(cumulative!.count, 6);
  const [cumulativeDau] = await results(t, { ...one('dau'), trendsFilter: { display: 'ActionsLineGraphCumulative' } });
  // Each person once, on their first day: u1 May 1, u2 May 2, u3 May 4.
  t.same(cumulativeDau!.data, [1, 2, 2, 3, 3, 3, 3]);
  for (const display of ['BoldNumber', 'ActionsPie', 'ActionsTable']) {
    const [total] = await results(t, { ...one('total'), trendsFilter: { display } });
    t.equal(total!.aggregated_value, 6, display);
    t.same(total!.data, []);
    t.equal(total!.count, 0);
  }
  const [people] = await results(t, { ...one('dau'), trendsFilter: { display: 'BoldNumber' } });
  t.equal(people!.aggregated_value, 3);
  const pie = await results(t, {
    ...one('total'),
    trendsFilter: { display: 'ActionsPie' },
    breakdownFilter: { breakdown: '$browser' },
  });
  t.same(
    pie.map((r) => [r.breakdown_value, r.aggregated_value]),
    [
      ['Firefox', 3],
      ['Chrome', 2],
      ['Safari', 1],
    ],
  );
});

t.test('asynchronous', async (t) => {
  const res = await call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'TrendsQuery', dateRange: RANGE, ...one('total') } as never, refresh: 'force_async' },
  });
  t.equal(res.status, 202);
  const id = (res.body as any).query_status.id as string;
  let status: any;
  for (let i = 0; i < 200; i++) {
    status = (await call('query_retrieve', { key: a.key, params: { ...params, id } })).body;
    if (status.query_status.complete) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(status.query_status.error, false);
  t.same(status.query_status.results.results[0].data, [2, 2, 1, 1, 0, 0, 0]);
  const bad = await call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'TrendsQuery', series: [] } as never, refresh: 'async' },
  });
  t.equal(bad.status, 400);
});

t.test('tenant walls and authentication', async (t) => {
  // B's data is 2x A's under other distinct ids; A's answer above is exactly A's. B sees only its own.
  const [fromB] = (await trends(one('total'), b.key, b.project.id).then((r) => (r.body as any).results)) as Item[];
  t.same(fromB!.data, [4, 4, 2, 2, 0, 0, 0]);
  const other = await trends(one('total'), b.key, a.project.id);
  t.ok([403, 404].includes(other.status), `another organization's project: ${other.status}`);
  const anonymous = await call('query_create', {
    params,
    body: { query: { kind: 'TrendsQuery', ...one('total') } as never },
  });
  t.equal(anonymous.status, 401);
  const reader = await makeKey(db, a.user, ['insight:read']);
  const noScope = await trends(one('total'), reader);
  t.equal(noScope.status, 403);
  const member = await makeMember(db, a, 1, ['query:read']);
  const ok = await trends(one('total'), member.key);
  t.equal(ok.status, 200);
});

t.test('the answer shows its HogQL, which the Query API runs to the same numbers', async (t) => {
  const res = await trends(one('total', { properties: [{ key: 'price', value: 5, operator: 'gt', type: 'event' }] }));
  const { hogql } = res.body as { hogql: string };
  t.match(hogql, /^SELECT toStartOfDay\(timestamp\) AS b, count\(\) AS value FROM events WHERE .*'\$pageview'/);
  const run = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query: `${hogql} ORDER BY b` } },
  });
  // Prices over 5: May 1 10 and 20, May 2 30, May 3 "7"; days without one have no row.
  t.same(
    (run.body as { results: [string, number][] }).results.map(([b, n]) => [b.slice(0, 10), n]),
    [
      ['2024-05-01', 2],
      ['2024-05-02', 1],
      ['2024-05-03', 1],
    ],
  );
});
