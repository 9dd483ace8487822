// `filterTestAccounts: true` applies the project's test account filters to every insight kind, as PostHog
// does; without configured filters it changes nothing. Expected numbers are worked out by hand below.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { capture } from '../helpers/events.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const RANGE = { date_from: '2024-05-01', date_to: '2024-05-03' };

// u1 is a customer; u2 is staff (an internal e-mail); u3 browses from localhost. Both tenants get the same.
const at = (distinct_id: string, event: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp,
  properties: { $host: 'example.com', ...properties },
});
const batch = [
  at('u1', '$identify', '2024-05-01T08:00:00Z', { $set: { email: 'ann@x.io' } }),
  at('u2', '$identify', '2024-05-01T08:00:00Z', { $set: { email: 'bob@internal.io' } }),
  at('u1', '$pageview', '2024-05-01T10:00:00Z'),
  at('u2', '$pageview', '2024-05-01T12:00:00Z'),
  at('u2', 'signup', '2024-05-01T13:00:00Z'),
  at('u1', '$pageview', '2024-05-02T10:00:00Z'),
  at('u1', 'signup', '2024-05-02T11:00:00Z'),
  at('u3', '$pageview', '2024-05-03T09:00:00Z', { $host: 'localhost' }),
  at('u3', 'signup', '2024-05-03T10:00:00Z', { $host: 'localhost' }),
];
await capture(ctx, a.project.api_token, batch);
await capture(ctx, b.project.api_token, batch);

async function setFilters(tenant: typeof a, filters: unknown[]) {
  const res = await call('organizations_projects_partial_update', {
    key: tenant.key,
    params: { organization_id: tenant.organization.id, id: tenant.project.id },
    body: { test_account_filters: filters as never },
  });
  if (res.status !== 200) throw new Error(res.raw);
}
await setFilters(a, [
  { key: 'email', type: 'person', operator: 'not_icontains', value: 'internal.io' },
  { key: '$host', type: 'event', operator: 'is_not', value: ['localhost'] },
]);

const pageviews = { kind: 'EventsNode', event: '$pageview' };
const signups = { kind: 'EventsNode', event: 'signup' };
async function run(tenant: typeof a, query: Record<string, unknown>) {
  const res = await call('query_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { query: { dateRange: RANGE, ...query } as never },
  });
  return res;
}
async function results(tenant: typeof a, query: Record<string, unknown>) {
  const res = await run(tenant, query);
  if (res.status !== 200) throw new Error(res.raw);
  return (res.body as { results: any[] }).results;
}

t.test('TrendsQuery: staff and localhost traffic leave the counts', async (t) => {
  const trends = (filterTestAccounts: boolean) =>
    results(a, { kind: 'TrendsQuery', series: [pageviews], filterTestAccounts });
  t.same((await trends(false))[0].data, [2, 1, 1], 'everyone: u1 and u2 on May 1, u1 on May 2, u3 on May 3');
  t.same((await trends(true))[0].data, [1, 1, 0], 'only u1');
  const withOwn = await results(a, {
    kind: 'TrendsQuery',
    series: [pageviews],
    filterTestAccounts: true,
    properties: [{ key: '$host', type: 'event', operator: 'exact', value: ['example.com'] }],
  });
  t.same(withOwn[0].data, [1, 1, 0], "ANDed with the query's own properties");
});

t.test('FunnelsQuery and StickinessQuery apply them too', async (t) => {
  const funnel = (filterTestAccounts: boolean) =>
    results(a, { kind: 'FunnelsQuery', series: [pageviews, signups], filterTestAccounts });
  t.same(
    (await funnel(false)).map((s: { count: number }) => s.count),
    [3, 3],
  );
  t.same(
    (await funnel(true)).map((s: { count: number }) => s.count),
    [1, 1],
  );
  const sticky = await results(a, { kind: 'StickinessQuery', series: [pageviews], filterTestAccounts: true });
  t.same(sticky[0].data, [0, 1, 0], 'u1 alone, active on 2 of the 3 days');
});

t.test('without configured filters the flag changes nothing', async (t) => {
  const trends = (filterTestAccounts: boolean) =>
    results(b, { kind: 'TrendsQuery', series: [pageviews], filterTestAccounts });
  t.same((await trends(true))[0].data, [2, 1, 1]);
  t.same((await trends(true))[0].data, (await trends(false))[0].data);
});

t.test("stored filters this server cannot apply are the query's 400, naming the flag", async (t) => {
  const c = await makeTenant(db);
  await setFilters(c, [{ key: 'email', type: 'person', operator: 'no_such_operator', value: 'x' }]);
  const res = await run(c, { kind: 'TrendsQuery', series: [pageviews], filterTestAccounts: true });
  t.equal(res.status, 400);
  t.match(res.body, { type: 'validation_error', attr: 'query__filterTestAccounts' });
  const off = await run(c, { kind: 'TrendsQuery', series: [pageviews] });
  t.equal(off.status, 200, 'a query without the flag does not read them');
});

t.test('EventsQuery applies them, ANDed with its own properties', async (t) => {
  const count = async (filterTestAccounts: boolean) =>
    (await results(a, { kind: 'EventsQuery', select: ['count()'], event: '$pageview', filterTestAccounts }))[0][0];
  t.equal(await count(false), 4, 'u1 twice, u2 and u3');
  t.equal(await count(true), 2, 'u1 alone');
});

t.test('a cached answer is not served after the project changes its filters', async (t) => {
  const c = await makeTenant(db);
  await capture(ctx, c.project.api_token, batch);
  const blocking = async () => {
    const res = await call('query_create', {
      key: c.key,
      params: { project_id: c.project.id },
      body: {
        refresh: 'blocking',
        query: { kind: 'TrendsQuery', series: [pageviews], dateRange: RANGE, filterTestAccounts: true } as never,
      },
    });
    return res.body as { results: { data: number[] }[]; is_cached: boolean };
  };
  t.same((await blocking()).results[0]!.data, [2, 1, 1], 'no filters yet: everyone');
  t.equal((await blocking()).is_cached, true, 'served from the cache while nothing changes');
  await setFilters(c, [{ key: 'email', type: 'person', operator: 'not_icontains', value: 'internal.io' }]);
  const after = await blocking();
  t.equal(after.is_cached, false, 'computed again under the new filters');
  t.same(after.results[0]!.data, [1, 1, 1], 'u2 (staff) leaves May 1; u3 stays');
});
