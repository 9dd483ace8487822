// FunnelsQuery on a small known data set captured through the real endpoint; every expected number is
// worked out by hand below from the events listed here.
import t, { type Test } from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { capture, captureWithTwins } from '../helpers/events.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { posthogValidator } from './posthog-schema.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const c = await makeTenant(db);

const ev = (event: string, distinct_id: string, at: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp: `2024-06-${at}Z`,
  properties,
});
const chrome = { $browser: 'Chrome' };
const firefox = { $browser: 'Firefox' };
// Steps view -> signup -> pay, June 1-10 (UTC).
// p1 converts (600 s, then 3600 s). p2 signs up before viewing: one step when ordered, two when unordered.
// p3 views, does something else, signs up 1200 s later: strict stops at one step. p4 signs up four days
// (345600 s) after viewing. a5 views anonymously; u5 identifies as a5 (second batch) and signs up and pays
// 1800 s apart: one person with three steps. p9 viewed before the range: its signup alone starts nothing.
const batch1 = [
  ev('view', 'p1', '01T10:00:00', chrome),
  ev('signup', 'p1', '01T10:10:00', chrome),
  ev('pay', 'p1', '01T11:10:00', chrome),
  ev('signup', 'p2', '02T09:00:00', firefox),
  ev('view', 'p2', '02T10:00:00', firefox),
  ev('view', 'p3', '03T08:00:00', chrome),
  ev('other', 'p3', '03T08:10:00', chrome),
  ev('signup', 'p3', '03T08:20:00', chrome),
  ev('view', 'p4', '01T12:00:00', { $browser: 'Safari' }),
  ev('signup', 'p4', '05T12:00:00', { $browser: 'Safari' }),
  ev('view', 'a5', '04T10:00:00', firefox),
  { ...ev('view', 'p9', '01T00:00:00'), timestamp: '2024-05-31T23:00:00Z' },
  ev('signup', 'p9', '01T01:00:00'),
];
const batch2 = [
  ev('$identify', 'u5', '04T09:00:00', { $anon_distinct_id: 'a5' }),
  ev('signup', 'u5', '04T10:30:00', chrome),
  ev('pay', 'u5', '04T11:00:00', chrome),
];
// Project B: the same funnel twice over under other ids; nothing of it may count in A.
await captureWithTwins(ctx, a.project.api_token, b.project.api_token, [batch1, batch2]);
// Project C, exclusions of `cancel`: c1 converts; c6 cancels between view and signup; c7 cancels after viewing
// and never signs up; c8 cancels before viewing; c9 cancels between signup and pay.
await capture(ctx, c.project.api_token, [
  ev('view', 'c1', '01T10:00:00'),
  ev('signup', 'c1', '01T10:10:00'),
  ev('pay', 'c1', '01T11:00:00'),
  ev('view', 'c6', '02T10:00:00'),
  ev('cancel', 'c6', '02T10:05:00'),
  ev('signup', 'c6', '02T10:10:00'),
  ev('view', 'c7', '03T10:00:00'),
  ev('cancel', 'c7', '03T10:05:00'),
  ev('cancel', 'c8', '04T09:00:00'),
  ev('view', 'c8', '04T10:00:00'),
  ev('signup', 'c8', '04T10:30:00'),
  ev('view', 'c9', '05T10:00:00'),
  ev('signup', 'c9', '05T10:10:00'),
  ev('cancel', 'c9', '05T10:20:00'),
  ev('pay', 'c9', '05T10:30:00'),
]);

const RANGE = { date_from: '2024-06-01', date_to: '2024-06-10' };
const STEPS = ['view', 'signup', 'pay'].map((event) => ({ kind: 'EventsNode', event }));
const validate = posthogValidator('FunnelsQueryResponse');
type Step = Record<string, any>;

const run = (query: Record<string, unknown>, key = a.key, project_id = a.project.id) =>
  call('query_create', {
    key,
    params: { project_id },
    body: { query: { kind: 'FunnelsQuery', dateRange: RANGE, series: STEPS, ...query } as never },
  });
async function funnel(t: Test, query: Record<string, unknown>, key = a.key, project_id = a.project.id) {
  const res = await run(query, key, project_id);
  t.equal(res.status, 200, res.status === 200 ? 'answered' : JSON.stringify(res.body));
  if (validate && !validate(res.body)) t.fail(`not PostHog's FunnelsQueryResponse: ${JSON.stringify(validate.errors)}`);
  return (res.body as { results: any[] }).results;
}
const counts = (steps: Step[]) => steps.map((s) => s.count);
const times = (steps: Step[]) => steps.map((s) => [s.average_conversion_time, s.median_conversion_time]);

t.test('ordered: counts, conversion times and PostHog step fields', async (t) => {
  const steps: Step[] = await funnel(t, {});
  // p1, p3, p4 and p5 (merged) reach signup; p1 and p5 pay. p2's view came after its signup.
  t.same(counts(steps), [5, 4, 2]);
  // signup after view: 600, 1200, 345600, 1800 -> mean 87300, median 1500; pay: 3600 and 1800.
  t.same(times(steps), [
    [null, null],
    [87300, 1500],
    [2700, 2700],
  ]);
  t.match(steps[1], {
    action_id: 'signup',
    name: 'signup',
    custom_name: null,
    order: 1,
    type: 'events',
    people: [],
    converted_people_url: null,
    dropped_people_url: null,
  });
  t.notOk('breakdown' in steps[0]!);
  const named = await funnel(t, { series: [{ ...STEPS[0], custom_name: 'Landing' }, STEPS[1]] });
  t.equal(named[0].custom_name, 'Landing');
  t.same(counts(named), [5, 4]);
});

t.test('conversion window: events after it do not convert', async (t) => {
  const steps: Step[] = await funnel(t, {
    funnelsFilter: { funnelWindowInterval: 1, funnelWindowIntervalUnit: 'day' },
  });
  // p4's signup came four days after its view.
  t.same(counts(steps), [5, 3, 2]);
  t.same(times(steps)[1], [1200, 1200]);
  const hours = await funnel(t, { funnelsFilter: { funnelWindowInterval: 4, funnelWindowIntervalUnit: 'hour' } });
  t.same(counts(hours), [5, 3, 2]);
  const minutes = await funnel(t, { funnelsFilter: { funnelWindowInterval: 15, funnelWindowIntervalUnit: 'minute' } });
  // Within 15 minutes of the view: only p1's signup (10 min); nobody pays within 15 minutes of viewing.
  t.same(counts(minutes), [5, 1, 0]);
});

t.test('strict: any other event between two steps breaks the path', async (t) => {
  const steps: Step[] = await funnel(t, { funnelsFilter: { funnelOrderType: 'strict' } });
  // p3's "other" comes between view and signup; p5's $identify came before its view.
  t.same(counts(steps), [5, 3, 2]);
  t.same(times(steps), [
    [null, null],
    [116000, 1800],
    [2700, 2700],
  ]);
});

t.test('unordered: steps in any order within the window', async (t) => {
  const steps: Step[] = await funnel(t, { funnelsFilter: { funnelOrderType: 'unordered' } });
  // p9's lone signup is one step; p2 did two (signup then view, 3600 s).
  t.same(counts(steps), [6, 5, 2]);
  t.same(
    steps.map((s) => [s.name, s.action_id]),
    [
      ['Completed 1 step', null],
      ['Completed 2 steps', null],
      ['Completed 3 steps', null],
    ],
  );
  // Second step after the first: 600, 3600, 1200, 345600, 1800 -> mean 70560, median 1800.
  t.same(times(steps)[1], [70560, 1800]);
});

t.test('exclusions drop the persons whose path has the excluded event in range', async (t) => {
  const q = (exclusions: unknown[]) => funnel(t, { funnelsFilter: { exclusions } }, c.key, c.project.id);
  t.same(counts(await q([])), [5, 4, 2]);
  const cancel = (from: number, to: number) => ({
    kind: 'EventsNode',
    event: 'cancel',
    funnelFromStep: from,
    funnelToStep: to,
  });
  // Between view and signup: c6 and c7 are gone; c8 cancelled before viewing, c9 after signing up.
  t.same(counts(await q([cancel(0, 1)])), [3, 3, 2]);
  // Between view and pay: c9 too.
  t.same(counts(await q([cancel(0, 2)])), [2, 2, 1]);
  // Between signup and pay: c9 only (c7 never signed up; c6's cancel came before its signup).
  t.same(counts(await q([cancel(1, 2)])), [4, 3, 1]);
});

t.test('breakdown by an event property, first and last touch, limit and "Other"', async (t) => {
  const breakdownFilter = { breakdown: '$browser', breakdown_type: 'event' };
  const groups: Step[][] = await funnel(t, { breakdownFilter });
  // First touch: Chrome p1 (3), p3 (2); Firefox p2 (1), p5 (3, its anonymous view); Safari p4 (2).
  t.same(
    groups.map((g) => [g[0]!.breakdown_value, counts(g)]),
    [
      ['Chrome', [2, 2, 1]],
      ['Firefox', [2, 1, 1]],
      ['Safari', [1, 1, 0]],
    ],
  );
  t.same(groups[0]![2]!.breakdown, 'Chrome');
  t.same(times(groups[0]!)[1], [900, 900]);
  const last: Step[][] = await funnel(t, {
    breakdownFilter,
    funnelsFilter: { breakdownAttributionType: 'last_touch' },
  });
  // Last touch: p5's last event is Chrome.
  t.same(
    last.map((g) => [g[0]!.breakdown_value, counts(g)]),
    [
      ['Chrome', [3, 3, 2]],
      ['Safari', [1, 1, 0]],
      ['Firefox', [1, 0, 0]],
    ],
  );
  const limited: Step[][] = await funnel(t, {
    breakdownFilter: { ...breakdownFilter, breakdown: ['$browser'], breakdown_limit: 2 },
  });
  t.same(
    limited.map((g) => [g[0]!.breakdown_value, counts(g)]),
    [
      [['Chrome'], [2, 2, 1]],
      [['Firefox'], [2, 1, 1]],
      [['Other'], [1, 1, 0]],
    ],
  );
});

t.test('trends: conversion rate per day of entry', async (t) => {
  const [r, ...rest] = await funnel(t, { funnelsFilter: { funnelVizType: 'trends' } });
  t.equal(rest.length, 0);
  // June 1: p1 converts, p4 does not (50%); June 2 p2, June 3 p3 do not; June 4 p5 converts.
  t.same(r.data, [50, 0, 0, 100, 0, 0, 0, 0, 0, 0]);
  t.equal(r.count, 10);
  t.same(r.days.slice(0, 2), ['2024-06-01', '2024-06-02']);
  t.same(r.labels[0], '1-Jun-2024');
  // From view to signup: June 1 both, June 3 p3, June 4 p5.
  const [toSignup] = await funnel(t, { funnelsFilter: { funnelVizType: 'trends', funnelToStep: 1 } });
  t.same(toSignup.data, [100, 0, 100, 100, 0, 0, 0, 0, 0, 0]);
  const byBrowser = await funnel(t, {
    funnelsFilter: { funnelVizType: 'trends' },
    breakdownFilter: { breakdown: '$browser' },
  });
  t.same(
    byBrowser.map((x: Step) => [x.breakdown_value, x.data.slice(0, 4)]),
    [
      ['Chrome', [100, 0, 0, 0]],
      ['Firefox', [0, 0, 0, 100]],
      ['Safari', [0, 0, 0, 0]],
    ],
  );
});

t.test('tenant wall: another project sees only its own', async (t) => {
  t.same(counts(await funnel(t, {}, b.key, b.project.id)), [10, 8, 4]);
  const crossed = await run({}, b.key, a.project.id);
  t.ok([403, 404].includes(crossed.status));
});

t.test('bad input and access', async (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [{ series: [STEPS[0]] }, 'query__series'],
    [{ series: undefined }, 'query__series'],
    [{ series: [STEPS[0], { kind: 'EventsNode', event: 'x', math: 'nope' }] }, 'query__series__1__math'],
    [{ dateRange: { date_from: '2024-06-10', date_to: '2024-06-01' } }, 'query__dateRange'],
    [{ funnelsFilter: { funnelVizType: 'time_to_convert' } }, 'query__funnelsFilter__funnelVizType'],
    [{ funnelsFilter: { funnelWindowInterval: 0 } }, 'query__funnelsFilter__funnelWindowInterval'],
    [{ funnelsFilter: { funnelWindowIntervalUnit: 'fortnight' } }, 'query__funnelsFilter__funnelWindowIntervalUnit'],
    [
      { funnelsFilter: { exclusions: [{ kind: 'EventsNode', event: 'x', funnelFromStep: 1, funnelToStep: 1 }] } },
      'query__funnelsFilter__exclusions__0',
    ],
    [
      { funnelsFilter: { exclusions: [{ kind: 'EventsNode', event: 'signup', funnelFromStep: 0, funnelToStep: 1 }] } },
      'query__funnelsFilter__exclusions__0',
    ],
    [{ funnelsFilter: { funnelVizType: 'trends', funnelFromStep: 2 } }, 'query__funnelsFilter__funnelFromStep'],
    [{ breakdownFilter: { breakdown: 'x', breakdown_type: 'cohort' } }, 'query__breakdownFilter__breakdown_type'],
    [{ interval: 'minute', dateRange: { date_from: '2020-01-01', date_to: '2024-01-01' } }, 'query__interval'],
  ];
  for (const [query, attr] of cases) {
    const res = await run(query);
    t.equal(res.status, 400, JSON.stringify(query));
    t.match(res.body, { type: 'validation_error', attr }, JSON.stringify(res.body));
  }
  const noScope = await run({}, await makeKey(db, a.user, ['insight:read']));
  t.equal(noScope.status, 403);
  const anonymous = await call('query_create', {
    params: { project_id: a.project.id },
    body: { query: { kind: 'FunnelsQuery', series: STEPS } as never },
  });
  t.equal(anonymous.status, 401);
});

t.test('strict and unordered funnels with an exclusion', async (t) => {
  const exclusions = [{ kind: 'EventsNode', event: 'cancel', funnelFromStep: 0, funnelToStep: 2 }];
  const q = (order: string, withExclusions: boolean) =>
    funnel(
      t,
      { funnelsFilter: { funnelOrderType: order, ...(withExclusions ? { exclusions } : {}) } },
      c.key,
      c.project.id,
    );
  // Unordered: c1 3 steps, c6 2 (view, signup), c7 1, c8 2, c9 3.
  t.same(counts(await q('unordered', false)), [5, 4, 2]);
  // A cancel after the start and before the last step reached drops c6, c7 and c9 (each one's furthest path
  // has it); c8 cancelled before its start.
  t.same(counts(await q('unordered', true)), [2, 2, 1]);
  // Strict: c6's and c9's paths stop at the cancel that follows a step (c6 at view, c9 at signup).
  t.same(counts(await q('strict', false)), [5, 3, 1]);
  // c6 and c7 cancel right after viewing, c9 after signing up, each before reaching pay: dropped. c8 cancelled
  // before its start.
  t.same(counts(await q('strict', true)), [2, 2, 1]);
});

t.test('a step repeated: the second must come strictly after the first, within the window', async (t) => {
  const d = await makeTenant(db);
  // d1 views twice five minutes apart; d2 once; d3 twice, two days apart (outside a one-day window); d4 four
  // times a minute apart.
  await capture(ctx, d.project.api_token, [
    ...['00', '01', '02', '03'].map((m) => ev('view', 'd4', `01T10:${m}:00`)),
    ev('view', 'd1', '01T10:00:00'),
    ev('view', 'd1', '01T10:05:00'),
    ev('view', 'd2', '01T10:00:00'),
    ev('view', 'd3', '01T10:00:00'),
    ev('view', 'd3', '03T10:00:00'),
  ]);
  const views = (n: number) => Array.from({ length: n }, () => ({ kind: 'EventsNode', event: 'view' }));
  const q = (n: number) =>
    funnel(
      t,
      { series: views(n), funnelsFilter: { funnelWindowInterval: 1, funnelWindowIntervalUnit: 'day' } },
      d.key,
      d.project.id,
    );
  const two: Step[] = await q(2);
  t.same(counts(two), [4, 2]);
  // d1 300 s, d4 60 s.
  t.same(times(two)[1], [180, 180]);
  const four: Step[] = await q(4);
  t.same(counts(four), [4, 2, 1, 1]);
  t.same(times(four).slice(2), [
    [60, 60],
    [60, 60],
  ]);
});

t.test('the answer shows its HogQL, which the Query API runs to the same numbers', async (t) => {
  const res = await run({});
  const { hogql } = res.body as { hogql: string };
  t.match(hogql, /^WITH ev AS \(SELECT person_id AS actor, .* FROM events WHERE .*'view'/s);
  const again = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query: hogql } },
  });
  t.equal(again.status, 200, JSON.stringify(again.body));
  // No breakdown; 5, 4 and 2 persons; mean and median seconds to signup, then to pay (see the first test).
  t.same((again.body as { results: unknown[][] }).results, [[null, 5, 4, 2, 87300, 1500, 2700, 2700]]);
});

t.test("PostHog's most steps, 30: the query the server writes is longer than a caller's may be", async (t) => {
  const series = Array.from({ length: 30 }, () => ({ kind: 'EventsNode', event: 'view' }));
  const res = await run({ series });
  t.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
  t.ok((res.body as { hogql: string }).hogql.length > 16_384);
  // Each of the five persons viewed once in range: none reaches a second view.
  t.same(counts((res.body as { results: Step[] }).results), [5, ...Array(29).fill(0)]);
});
