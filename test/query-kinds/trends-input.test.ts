// TrendsQuery input PostHog refuses: each is a 400 in PostHog's shape naming the attr, never a 500.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const a = await makeTenant(ctx.db);
const params = { project_id: a.project.id };
const RANGE = { date_from: '2024-05-01', date_to: '2024-05-07' };
const trends = (query: Record<string, unknown>) =>
  ctx.call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'TrendsQuery', dateRange: RANGE, ...query } as never },
  });
const one = (math: string) => ({ series: [{ kind: 'EventsNode', event: '$pageview', math }] });

t.test('bad input is a 400 in PostHog shape', async (t) => {
  const cases: [Record<string, unknown>, string | null][] = [
    [{ series: undefined }, 'query__series'],
    [{ series: [] }, 'query__series'],
    [one('bogus'), 'query__series__0__math'],
    [one('sum'), 'query__series__0__math_property'],
    [
      { ...one('total'), interval: 'minute', dateRange: { date_from: '2024-01-01', date_to: '2024-12-31' } },
      'query__interval',
    ],
    [{ ...one('total'), dateRange: { date_from: '2024-05-07', date_to: '2024-05-01' } }, 'query__dateRange'],
    [{ ...one('total'), dateRange: { date_from: 'yesterday-ish' } }, 'query__dateRange__date_from'],
    [{ ...one('total'), trendsFilter: { formula: 'A + C' } }, 'query__trendsFilter__formula'],
    [{ ...one('total'), trendsFilter: { display: 'Nope' } }, 'query__trendsFilter__display'],
    [{ series: [{ kind: 'ActionsNode', id: 1 }] }, 'query__series__0__kind'],
  ];
  for (const [query, attr] of cases) {
    const res = await trends(query);
    t.equal(res.status, 400, JSON.stringify(query));
    t.match(res.body, { type: 'validation_error', attr }, JSON.stringify(query));
  }
  const unknownKind = await ctx.call('query_create', {
    key: a.key,
    params,
    body: { query: { kind: 'WebOverviewQuery' } as never },
  });
  t.equal(unknownKind.status, 400);
  t.match(unknownKind.body, { type: 'validation_error' });
});

t.test('property names with quotes, backticks and backslashes are read as named', async (t) => {
  const key = "it's a `odd` \\ name";
  await insertEvents(ctx.db, a.project.id, [
    { event: 'odd', distinct_id: 'u1', timestamp: new Date('2024-05-02T10:00:00Z'), properties: { [key]: 4 } },
    { event: 'odd', distinct_id: 'u1', timestamp: new Date('2024-05-02T11:00:00Z'), properties: { [key]: 6 } },
    { event: 'odd', distinct_id: 'u2', timestamp: new Date('2024-05-03T10:00:00Z'), properties: { [key]: 'x' } },
  ]);
  const res = await trends({
    series: [{ kind: 'EventsNode', event: 'odd', math: 'sum', math_property: key }],
    properties: [{ key, value: 'x', operator: 'is_not', type: 'event' }],
    breakdownFilter: { breakdown: key },
  });
  t.equal(res.status, 200, res.raw);
  // Only the numeric values pass the filter: 4 and 6 on May 2, one breakdown value each.
  const results = (res.body as { results: { breakdown_value: string; data: number[] }[] }).results;
  t.same(
    results.map((r) => [r.breakdown_value, r.data]),
    [
      ['6', [0, 6, 0, 0, 0, 0, 0]],
      ['4', [0, 4, 0, 0, 0, 0, 0]],
    ],
  );
});
