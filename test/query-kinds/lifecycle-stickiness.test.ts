// LifecycleQuery and StickinessQuery on a small known data set captured through the real endpoint;
// the expected numbers are worked out by hand from the events listed here.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { captureWithTwins } from '../helpers/events.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { posthogValidator } from './posthog-schema.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);

const ev = (event: string, distinct_id: string, day: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp: `2024-05-${day}T12:00:00Z`,
  properties,
});
const pv = (distinct_id: string, day: string) => ev('$pageview', distinct_id, day);
// Persons are created at their first event. l3 was first seen on Apr 20, l5 on Apr 25; a5 is an anonymous
// id first seen May 2 whose person merges into l5's when l5 identifies (second batch).
const batch1 = [
  { ...ev('other', 'l3', '01'), timestamp: '2024-04-20T12:00:00Z' },
  { ...ev('other', 'l5', '01'), timestamp: '2024-04-25T12:00:00Z' },
  pv('l1', '01'),
  pv('l1', '02'),
  { ...pv('l1', '02'), timestamp: '2024-05-02T13:00:00Z' },
  pv('l1', '03'),
  pv('l1', '05'),
  pv('l2', '03'),
  pv('l2', '04'),
  pv('l3', '04'),
  pv('l4', '06'),
  pv('l4', '08'), // after the range
  pv('a5', '02'),
];
const batch2 = [
  { ...ev('$identify', 'l5', '03', { $anon_distinct_id: 'a5' }), timestamp: '2024-05-03T08:00:00Z' },
  pv('l5', '03'),
];
// Project B: the same people twice over under other ids; nothing of it may count in A.
await captureWithTwins(ctx, a.project.api_token, b.project.api_token, [batch1, batch2]);

const RANGE = { date_from: '2024-05-02', date_to: '2024-05-06' };
type Item = Record<string, any>;
const run = (kind: string, query: Record<string, unknown>, key = a.key, project_id = a.project.id) =>
  call('query_create', {
    key,
    params: { project_id },
    body: {
      query: { kind, dateRange: RANGE, series: [{ kind: 'EventsNode', event: '$pageview' }], ...query } as never,
    },
  });

t.test('lifecycle: new, returning, resurrecting, dormant per day', async (t) => {
  const res = await run('LifecycleQuery', {});
  t.equal(res.status, 200);
  const validate = posthogValidator('LifecycleQueryResponse');
  if (validate && !validate(res.body))
    t.fail(`not PostHog's LifecycleQueryResponse: ${JSON.stringify(validate.errors)}`);
  const results = (res.body as { results: Item[] }).results;
  t.same(
    results.map((r) => r.status),
    ['new', 'returning', 'resurrecting', 'dormant'],
  );
  const by = Object.fromEntries(results.map((r) => [r.status, r.data]));
  // l1: active May 1, 2, 3, 5 (created May 1): returning May 2 and 3, resurrecting May 5, dormant May 4 and 6.
  // l2: created and active May 3, again May 4: new May 3, returning May 4, dormant May 5.
  // l3: created Apr 20, active May 4: resurrecting, dormant May 5.
  // l4: created and active May 6: new. (May 8 is outside.)
  // l5 (merged with a5, created Apr 25): active May 2 and 3: resurrecting May 2, returning May 3, dormant May 4.
  t.same(by.new, [0, 1, 0, 0, 1]);
  t.same(by.returning, [1, 2, 1, 0, 0]);
  t.same(by.resurrecting, [1, 0, 1, 1, 0]);
  t.same(by.dormant, [0, 0, -2, -2, -1]);
  t.same(results[0]!.days, ['2024-05-02', '2024-05-03', '2024-05-04', '2024-05-05', '2024-05-06']);
  t.same(results[0]!.labels, ['2-May-2024', '3-May-2024', '4-May-2024', '5-May-2024', '6-May-2024']);
  t.equal(results[3]!.label, '$pageview - dormant');
  t.equal(results[3]!.count, -5);
  t.match(results[0]!.action, { id: '$pageview', name: '$pageview', type: 'events', order: 0, math: 'total' });
});

t.test('lifecycle: weekly, and another project sees only its own', async (t) => {
  const week = await run('LifecycleQuery', {
    interval: 'week',
    dateRange: { date_from: '2024-05-05', date_to: '2024-05-11' },
  });
  // The week of May 5 (Sunday): l1 (active Apr 28 week and May 5 week) returning; l4 returning (created May 6
  // in the week of May 5, so new); l2, l3, l5 were active only in the week before: dormant.
  const by = Object.fromEntries((week.body as { results: Item[] }).results.map((r) => [r.status, r.data]));
  t.same(by.new, [1]);
  t.same(by.returning, [1]);
  t.same(by.resurrecting, [0]);
  t.same(by.dormant, [-3]);
  const other = await run('LifecycleQuery', {}, b.key, b.project.id);
  const byB = Object.fromEntries((other.body as { results: Item[] }).results.map((r) => [r.status, r.data]));
  t.same(byB.returning, [2, 4, 2, 0, 0]);
});

t.test('stickiness: persons by the number of active days', async (t) => {
  const res = await run('StickinessQuery', {});
  t.equal(res.status, 200);
  const validate = posthogValidator('StickinessQueryResponse');
  if (validate && !validate(res.body))
    t.fail(`not PostHog's StickinessQueryResponse: ${JSON.stringify(validate.errors)}`);
  const [r] = (res.body as { results: Item[] }).results;
  // Days active May 2-6: l1 3 (2, 3, 5), l2 2, l3 1, l4 1, l5 (with a5) 2.
  t.same(r!.data, [2, 2, 1, 0, 0]);
  t.equal(r!.count, 5);
  t.same(r!.days, [1, 2, 3, 4, 5]);
  t.same(r!.labels, ['1 day', '2 days', '3 days', '4 days', '5 days']);
  t.match(r!.action, { order: 0, type: 'events', name: '$pageview', id: '$pageview' });
  const [cumulative] = (
    (await run('StickinessQuery', { stickinessFilter: { computedAs: 'cumulative' } })).body as { results: Item[] }
  ).results;
  t.same(cumulative!.data, [5, 3, 1, 0, 0]);
  t.equal(cumulative!.labels[1], '2 days or more');
  // A day counts only with two pageviews or more: only l1's May 2.
  const [criteria] = (
    (await run('StickinessQuery', { stickinessFilter: { stickinessCriteria: { operator: 'gte', value: 2 } } }))
      .body as { results: Item[] }
  ).results;
  t.same(criteria!.data, [1, 0, 0, 0, 0]);
  const compared = (await run('StickinessQuery', { compareFilter: { compare: true } })).body as { results: Item[] };
  // The previous five days (Apr 27 - May 1): l1's pageview on May 1.
  t.same(
    compared.results.map((x) => [x.compare_label, x.data]),
    [
      ['current', [2, 2, 1, 0, 0]],
      ['previous', [1, 0, 0, 0, 0]],
    ],
  );
  const [fromB] = ((await run('StickinessQuery', {}, b.key, b.project.id)).body as { results: Item[] }).results;
  t.same(fromB!.data, [4, 4, 2, 0, 0]);
});

t.test('bad input and access', async (t) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['LifecycleQuery', { series: [] }, 'query__series'],
    [
      'LifecycleQuery',
      {
        series: [
          { kind: 'EventsNode', event: 'a' },
          { kind: 'EventsNode', event: 'b' },
        ],
      },
      'query__series',
    ],
    ['StickinessQuery', { series: [] }, 'query__series'],
    ['StickinessQuery', { intervalCount: 2 }, 'query__intervalCount'],
    ['StickinessQuery', { dateRange: { date_from: '2024-05-06', date_to: '2024-05-01' } }, 'query__dateRange'],
    ['LifecycleQuery', { dateRange: { date_from: 'soon' } }, 'query__dateRange__date_from'],
  ];
  for (const [kind, query, attr] of cases) {
    const res = await run(kind, query);
    t.equal(res.status, 400, `${kind} ${JSON.stringify(query)}`);
    t.match(res.body, { type: 'validation_error', attr });
  }
  const anonymous = await call('query_create', {
    params: { project_id: a.project.id },
    body: { query: { kind: 'LifecycleQuery', series: [{ kind: 'EventsNode' }] } as never },
  });
  t.equal(anonymous.status, 401);
  const noScope = await run('StickinessQuery', {}, await makeKey(db, a.user, ['insight:read']));
  t.equal(noScope.status, 403);
  const otherProject = await run('LifecycleQuery', {}, b.key, a.project.id);
  t.ok([403, 404].includes(otherProject.status));
});
