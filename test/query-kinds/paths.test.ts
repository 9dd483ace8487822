// PathsQuery on a small known data set captured through the real endpoint; every expected link is worked out
// by hand from the events listed here.
import t, { type Test } from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { captureWithTwins } from '../helpers/events.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { posthogValidator } from './posthog-schema.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);

const at = (time: string, day = '01') => `2024-06-${day}T${time}:00Z`;
const pv = (distinct_id: string, time: string, url: string, day = '01') => ({
  event: '$pageview',
  distinct_id,
  timestamp: at(time, day),
  properties: { $current_url: url },
});
const ev = (event: string, distinct_id: string, time: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp: at(time),
  properties,
});
// All on June 1 (UTC) unless said. p1: two visits, 50 minutes apart; a2 views "/" anonymously, then (second
// batch) identifies as p2 and goes on: one person; p3's "/about" comes exactly 30 minutes after "/" (a new
// session); p4 uses the app (screens and a custom event); p6 reads the blog; p5 only on June 5.
const batch1 = [
  pv('p1', '10:00', '/'),
  pv('p1', '10:01', '/pricing/'),
  ev('clicked', 'p1', '10:02'),
  pv('p1', '10:03', '/signup'),
  pv('p1', '10:04', '/signup'),
  pv('p1', '10:10', '/done'),
  pv('p1', '11:00', '/'),
  pv('p1', '11:02', '/about'),
  pv('a2', '12:00', '/'),
  pv('p3', '13:00', '/pricing'),
  pv('p3', '13:10', '/'),
  pv('p3', '13:40', '/about'),
  ev('$screen', 'p4', '14:00', { $screen_name: 'Home' }),
  ev('$screen', 'p4', '14:01', { $screen_name: 'Settings' }),
  ev('purchase', 'p4', '14:03'),
  pv('p6', '15:00', '/'),
  pv('p6', '15:01', '/blog/one'),
  pv('p6', '15:02', '/blog/two'),
  pv('p6', '15:04', '/pricing'),
  pv('p5', '09:00', '/', '05'),
  pv('p5', '09:10', '/pricing', '05'),
];
const batch2 = [
  ev('$identify', 'p2', '12:04', { $anon_distinct_id: 'a2' }),
  pv('p2', '12:05', '/pricing'),
  pv('p2', '12:06', '/signup/'),
];
// Project B: the same people twice over under other ids; nothing of it may count in A.
await captureWithTwins(ctx, a.project.api_token, b.project.api_token, [batch1, batch2], { keepProperties: true });

const validate = posthogValidator('PathsQueryResponse');
const JUNE_1 = { date_from: '2024-06-01', date_to: '2024-06-03' };
type Link = { source: string; target: string; value: number; average_conversion_time: number };
const MIN = 60_000;
const link = (source: string, target: string, value: number, minutes: number): Link => ({
  source,
  target,
  value,
  average_conversion_time: Math.round(minutes * MIN),
});

const run = (query: Record<string, unknown>, key = a.key, project_id = a.project.id) =>
  call('query_create', {
    key,
    params: { project_id },
    body: { query: { kind: 'PathsQuery', dateRange: JUNE_1, ...query } as never },
  });
async function paths(t: Test, pathsFilter: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const res = await run({ pathsFilter, ...extra });
  t.equal(res.status, 200, res.status === 200 ? 'answered' : JSON.stringify(res.body));
  if (validate && !validate(res.body)) t.fail(`not PostHog's PathsQueryResponse: ${JSON.stringify(validate.errors)}`);
  return (res.body as { results: Link[] }).results;
}
const PAGES = { includeEventTypes: ['$pageview'] };

// Page views as paths (one trailing slash dropped, repeats in a row once at their last time):
// p1 session 1: / 10:00, /pricing 10:01, /signup 10:04, /done 10:10; session 2 (50 min later): / 11:00, /about 11:02.
// p2: / 12:00, /pricing 12:05, /signup 12:06. p3: /pricing 13:00, / 13:10; then /about alone.
// p6: / 15:00, /blog/one 15:01, /blog/two 15:02, /pricing 15:04.
const PAGE_LINKS = [
  link('1_/', '2_/pricing', 2, 3), // p1 1 min, p2 5 min
  link('2_/pricing', '3_/signup', 2, 2), // p1 3 min, p2 1 min
  link('1_/', '2_/about', 1, 2),
  link('1_/', '2_/blog/one', 1, 1),
  link('1_/pricing', '2_/', 1, 10),
  link('2_/blog/one', '3_/blog/two', 1, 1),
  link('3_/blog/two', '4_/pricing', 1, 2),
  link('3_/signup', '4_/done', 1, 6),
];

t.test('page views: sessions, repeats, trailing slashes, the order of links', async (t) => {
  t.same(await paths(t, PAGES), PAGE_LINKS);
  // The project has no path cleaning rules: asking for them changes nothing.
  t.same(await paths(t, { ...PAGES, pathReplacements: true }), PAGE_LINKS);
  const res = await run({ pathsFilter: PAGES });
  t.match(res.body, {
    resolved_date_range: { date_from: '2024-06-01T00:00:00Z', date_to: '2024-06-03T23:59:59Z' },
    timings: [{ k: './date_range' }, { k: './execute' }, { k: '.' }],
  });
  // June 5: only p5 (/ then /pricing 10 minutes later).
  t.same(await paths(t, PAGES, { dateRange: { date_from: '2024-06-05', date_to: '2024-06-05' } }), [
    link('1_/', '2_/pricing', 1, 10),
  ]);
});

t.test('every event when no type is chosen, in byte order of the names', async (t) => {
  // p1 session 1: / , /pricing, clicked 10:02, /signup 10:04, /done; p2's $identify (12:04) sits between / and
  // /pricing; p4: Home, Settings, purchase.
  const all = [
    link('1_/', '2_$identify', 1, 4),
    link('1_/', '2_/about', 1, 2),
    link('1_/', '2_/blog/one', 1, 1),
    link('1_/', '2_/pricing', 1, 1),
    link('1_/pricing', '2_/', 1, 10),
    link('1_Home', '2_Settings', 1, 1),
    link('2_$identify', '3_/pricing', 1, 1),
    link('2_/blog/one', '3_/blog/two', 1, 1),
    link('2_/pricing', '3_clicked', 1, 1),
    link('2_Settings', '3_purchase', 1, 2),
    link('3_/blog/two', '4_/pricing', 1, 2),
    link('3_/pricing', '4_/signup', 1, 1),
    link('3_clicked', '4_/signup', 1, 2),
    link('4_/signup', '5_/done', 1, 6),
  ];
  t.same(await paths(t, { stepLimit: 10 }), all);
  // As in PostHog, excluded steps are left out only together with chosen event types.
  t.same(await paths(t, { stepLimit: 10, excludeEvents: ['clicked'] }), all);
  // Screens by name and custom events by name; p1's lone "clicked" makes no link.
  t.same(await paths(t, { includeEventTypes: ['$screen', 'custom_event'] }), [
    link('1_Home', '2_Settings', 1, 1),
    link('2_Settings', '3_purchase', 1, 2),
  ]);
});

t.test('step limit, edge limit and edge weights', async (t) => {
  t.same(await paths(t, { ...PAGES, stepLimit: 2 }), [
    link('1_/', '2_/pricing', 2, 3),
    link('1_/', '2_/about', 1, 2),
    link('1_/', '2_/blog/one', 1, 1),
    link('1_/pricing', '2_/', 1, 10),
  ]);
  t.same(await paths(t, { ...PAGES, edgeLimit: 4 }), PAGE_LINKS.slice(0, 4));
  t.same(await paths(t, { ...PAGES, minEdgeWeight: 2 }), PAGE_LINKS.slice(0, 2));
  // Without the links travelled twice, "3_/signup" can no longer be reached from a first step: its link goes too.
  t.same(await paths(t, { ...PAGES, maxEdgeWeight: 1 }), PAGE_LINKS.slice(2, 7));
});

t.test('start and end points', async (t) => {
  // From the first /pricing: p1 /pricing 10:01, /signup 10:04, /done; p2 /pricing, /signup; p3 /pricing, /.
  const fromPricing = [
    link('1_/pricing', '2_/signup', 2, 2),
    link('1_/pricing', '2_/', 1, 10),
    link('2_/signup', '3_/done', 1, 6),
  ];
  t.same(await paths(t, { ...PAGES, startPoint: '/pricing' }), fromPricing);
  t.same(await paths(t, { ...PAGES, startPoint: '/pricing/' }), fromPricing, 'a trailing slash makes no difference');
  // Up to the first /pricing, its last two steps: p1 and p2 / then /pricing; p6 /blog/two then /pricing.
  t.same(await paths(t, { ...PAGES, endPoint: '/pricing', stepLimit: 2 }), [
    link('1_/', '2_/pricing', 2, 3),
    link('1_/blog/two', '2_/pricing', 1, 2),
  ]);
  // From / to the next /pricing in three steps: p1 and p2 are two steps long; p6's four keep their first and
  // last around "..." (the time of /blog/one, 15:01); p3 reaches / only after /pricing.
  t.same(await paths(t, { ...PAGES, startPoint: '/', endPoint: '/pricing', stepLimit: 3 }), [
    link('1_/', '2_/pricing', 2, 3),
    link('1_/', '2_...', 1, 1),
    link('2_...', '3_/pricing', 1, 3),
  ]);
});

t.test('exclusions, groupings, cleaning rules and filters', async (t) => {
  // Without /pricing: p1 / 10:00, /signup 10:04, /done; p2 / 12:00, /signup 12:06; p3's / and /about are now
  // exactly 30 minutes apart (two sessions, no link); p6 / , /blog/one, /blog/two.
  t.same(await paths(t, { ...PAGES, excludeEvents: ['/pricing'] }), [
    link('1_/', '2_/signup', 2, 5), // 4 and 6 minutes
    link('1_/', '2_/about', 1, 2),
    link('1_/', '2_/blog/one', 1, 1),
    link('2_/blog/one', '3_/blog/two', 1, 1),
    link('2_/signup', '3_/done', 1, 6),
  ]);
  // Both blog pages match "/blog/*", whose match in /blog/two ends before that of "*two": p6 / , /blog/* (last
  // 15:02), /pricing.
  const grouped = [
    link('1_/', '2_/pricing', 2, 3),
    link('2_/pricing', '3_/signup', 2, 2),
    link('1_/', '2_/about', 1, 2),
    link('1_/', '2_/blog/*', 1, 2),
    link('1_/pricing', '2_/', 1, 10),
    link('2_/blog/*', '3_/pricing', 1, 2),
    link('3_/signup', '4_/done', 1, 6),
  ];
  t.same(await paths(t, { ...PAGES, pathGroupings: ['*two', '/blog/*'] }), grouped);
  // Excluding the group: p6 / 15:00 then /pricing 15:04, with p1 (1 min) and p2 (5 min).
  t.same(await paths(t, { ...PAGES, pathGroupings: ['/blog/*'], excludeEvents: ['/blog/*'] }), [
    link('1_/', '2_/pricing', 3, 10 / 3),
    link('2_/pricing', '3_/signup', 2, 2),
    link('1_/', '2_/about', 1, 2),
    link('1_/pricing', '2_/', 1, 10),
    link('3_/signup', '4_/done', 1, 6),
  ]);
  const cleaned = await paths(t, {
    ...PAGES,
    localPathCleaningFilters: [{ regex: '^/(blog)/[a-z]+$', alias: '/\\1/:slug' }],
  });
  t.same(
    cleaned,
    grouped.map((l) => ({ ...l, source: l.source.replace('*', ':slug'), target: l.target.replace('*', ':slug') })),
  );
  // Only the views of / and /about: p1's second visit; p3's are 30 minutes apart.
  t.same(await paths(t, PAGES, { properties: [{ key: '$current_url', operator: 'exact', value: ['/', '/about'] }] }), [
    link('1_/', '2_/about', 1, 2),
  ]);
  // Steps named by a HogQL expression (every event, here those with a screen name).
  t.same(
    await paths(
      t,
      { includeEventTypes: ['hogql'], pathsHogQLExpression: 'lower(properties.$screen_name)' },
      { properties: [{ key: '$screen_name', operator: 'is_set' }] },
    ),
    [link('1_home', '2_settings', 1, 1)],
  );
});

t.test('tenant wall: another project sees only its own', async (t) => {
  const res = await run({ pathsFilter: PAGES }, b.key, b.project.id);
  t.equal(res.status, 200);
  // Project B holds every person twice: each link twice as travelled, at the same times.
  t.same(
    (res.body as { results: Link[] }).results,
    PAGE_LINKS.map((l) => ({ ...l, value: l.value * 2 })),
  );
  const crossed = await run({ pathsFilter: PAGES }, b.key, a.project.id);
  t.ok([403, 404].includes(crossed.status), `another project's id: ${crossed.status}`);
});

t.test('asynchronous, and through the environments route', async (t) => {
  const params = { project_id: a.project.id };
  const started = await call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'PathsQuery', dateRange: JUNE_1, pathsFilter: PAGES } as never, refresh: 'force_async' },
  });
  t.equal(started.status, 202);
  const id = (started.body as { query_status: { id: string } }).query_status.id;
  let status = await call('query_retrieve', { key: a.key, params: { ...params, id } });
  for (let i = 0; i < 300 && status.status === 202; i++) {
    await new Promise((r) => setTimeout(r, 50));
    status = await call('query_retrieve', { key: a.key, params: { ...params, id } });
  }
  t.equal(status.status, 200);
  t.same(status.body.query_status.results?.results, PAGE_LINKS);
  // An expression that does not parse is refused before anything is queued.
  const bad = await call('query_create', {
    key: a.key,
    params,
    body: {
      query: { kind: 'PathsQuery', pathsFilter: { includeEventTypes: ['hogql'], pathsHogQLExpression: '(' } } as never,
      refresh: 'async',
    },
  });
  t.equal(bad.status, 400);
  const env = await call('environments_query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'PathsQuery', dateRange: JUNE_1, pathsFilter: { ...PAGES, stepLimit: 2 } } as never },
  });
  t.same((env.body as { results: Link[] }).results.slice(0, 1), [link('1_/', '2_/pricing', 2, 3)]);
});

t.test('a saved insight: checked when saved, computed on a refresh', async (t) => {
  const source = { kind: 'PathsQuery', dateRange: JUNE_1, pathsFilter: PAGES };
  const made = await call('insights_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 'Paths', query: { kind: 'InsightVizNode', source } } as never,
  });
  t.equal(made.status, 201);
  const id = (made.body as { id: number }).id;
  const read = await call('insights_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id },
    query: { refresh: 'blocking' },
  });
  t.same(read.body.result, PAGE_LINKS);
  const bad = await call('insights_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: {
      name: 'Bad paths',
      query: { kind: 'InsightVizNode', source: { ...source, pathsFilter: { stepLimit: 'five' } } },
    } as never,
  });
  t.match(bad.body, { type: 'validation_error', attr: 'query__source__pathsFilter__stepLimit' });
});

t.test('bad input and access', async (t) => {
  const cases: [Record<string, unknown>, string | RegExp][] = [
    [{ pathsFilter: null }, 'query__pathsFilter'],
    [{ pathsFilter: { includeEventTypes: ['$autocapture'] } }, /^query__pathsFilter__includeEventTypes/],
    [{ pathsFilter: { stepLimit: -1 } }, 'query__pathsFilter__stepLimit'],
    [
      { pathsFilter: { localPathCleaningFilters: [{ alias: '/x' }] } },
      'query__pathsFilter__localPathCleaningFilters__0__regex',
    ],
    [
      { pathsFilter: { includeEventTypes: ['hogql'], pathsHogQLExpression: 'event ||' } },
      'query__pathsFilter__pathsHogQLExpression',
    ],
    [
      { pathsFilter: { includeEventTypes: ['hogql'], pathsHogQLExpression: 'count()' } },
      'query__pathsFilter__pathsHogQLExpression',
    ],
    [
      { pathsFilter: { includeEventTypes: ['hogql'], pathsHogQLExpression: 'nope.x' } },
      'query__pathsFilter__pathsHogQLExpression',
    ],
    [{ pathsFilter: {}, funnelPathsFilter: { funnelSource: {} } }, 'query__funnelPathsFilter'],
    [{ pathsFilter: {}, aggregation_group_type_index: 0 }, 'query__aggregation_group_type_index'],
    [{ pathsFilter: {}, dateRange: { date_from: 'yesterdayish' } }, 'query__dateRange__date_from'],
  ];
  for (const [query, attr] of cases) {
    const res = await run(query);
    t.equal(res.status, 400, JSON.stringify(query));
    t.match(res.body, { type: 'validation_error', attr }, JSON.stringify(res.body));
  }
  // A cleaning rule PostgreSQL cannot read is refused as the query's fault.
  const badRegex = await run({ pathsFilter: { ...PAGES, localPathCleaningFilters: [{ regex: '(', alias: '' }] } });
  t.equal(badRegex.status, 400, JSON.stringify(badRegex.body));
  t.equal((await run({ pathsFilter: PAGES }, await makeKey(db, a.user, ['insight:read']))).status, 403);
});

t.test('the answer shows its HogQL, which the Query API runs to the same links', async (t) => {
  const res = await run({ pathsFilter: { ...PAGES, edgeLimit: 2 } });
  const { hogql } = res.body as { hogql: string };
  t.match(hogql, /^WITH raw AS \(SELECT actor, .* FROM events WHERE .*LIMIT 2 WITH TIES\)/s);
  const again = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query: `${hogql} ORDER BY value DESC, source, target` } },
  });
  t.equal(again.status, 200, JSON.stringify(again.body));
  // The two most travelled links, with the times of PAGE_LINKS in seconds.
  t.same((again.body as { results: unknown[][] }).results, [
    ['1_/', '2_/pricing', 2, 180],
    ['2_/pricing', '3_/signup', 2, 120],
  ]);
});
