// The Query API through the result cache the insights use: a repeated query is served from the cache
// (proved by an event inserted between the two calls that only a forced refresh shows), PostHog's cache
// fields, its refresh modes as its Query API reads them, and no answer of one project served to another.
// Counts are worked out by hand from the events inserted below.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeKey, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const at = (s: string) => new Date(`${s}Z`);
// A: three signups and one pageview. B: one signup.
await insertEvents(db, a.project.id, [
  { event: 'signup', timestamp: at('2024-05-01T10:00:00') },
  { event: 'signup', timestamp: at('2024-05-01T11:00:00') },
  { event: 'signup', timestamp: at('2024-05-02T09:00:00') },
  { event: '$pageview', timestamp: at('2024-05-02T09:00:00') },
]);
await insertEvents(db, b.project.id, [{ event: 'signup', timestamp: at('2024-05-01T10:00:00') }]);

const SIGNUPS = "select count() from events where event = 'signup'";
type Tenant = typeof a;
const post = (query: string, extra: Record<string, unknown> = {}, tenant: Tenant = a) =>
  call('query_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { query: { kind: 'HogQLQuery', query }, ...extra },
  });
const ms = (iso: string | null | undefined) => Date.parse(iso ?? '');

t.test('a repeated query is served from the cache; force_blocking computes again', async (t) => {
  const first = await post(SIGNUPS);
  t.equal(first.status, 200);
  t.same(first.body.results, [[3]]);
  t.equal(first.body.is_cached, false);
  t.match(first.body.cache_key, /^cache_[0-9a-f]{40}$/);
  t.equal(first.body.timezone, 'UTC');
  t.equal(first.body.query_status, null);
  const refreshed = ms(first.body.last_refresh);
  t.ok(Math.abs(Date.now() - refreshed) < 60_000, 'last_refresh is now');
  t.equal(ms(first.body.next_allowed_client_refresh) - refreshed, 60_000, 'a minute for a HogQL query');
  t.equal(ms(first.body.cache_target_age) - refreshed, 6 * 3600_000, "PostHog's SQL target age: a day insight's");

  await insertEvents(db, a.project.id, [{ event: 'signup', timestamp: at('2024-05-03T09:00:00') }]);
  const again = await post(SIGNUPS);
  t.same(again.body.results, [[3]], 'the cached answer, without the new event');
  t.same(
    [again.body.is_cached, again.body.last_refresh, again.body.cache_key],
    [true, first.body.last_refresh, first.body.cache_key],
  );
  t.same((await post(SIGNUPS, { refresh: 'blocking' })).body.results, [[3]], 'blocking: fresh, so cached');
  t.same((await post(SIGNUPS, { refresh: 'force_cache' })).body.results, [[3]], 'force_cache: the cached one');
  const env = await call('environments_query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query: SIGNUPS } },
  });
  t.same([env.body.results, env.body.is_cached], [[[3]], true], 'the environments route reads the same cache');

  const forced = await post(SIGNUPS, { refresh: 'force_blocking' });
  t.same([forced.body.results, forced.body.is_cached], [[[4]], false], 'force_blocking sees the new event');
  t.ok(ms(forced.body.last_refresh) >= refreshed);
  const after = await post(SIGNUPS);
  t.same([after.body.results, after.body.is_cached], [[[4]], true], 'and stored it');
});

t.test('a HogQL answer is fresh for five minutes, then blocking computes it again', async (t) => {
  const q = 'select count() from events';
  t.same((await post(q)).body.results, [[5]]);
  await insertEvents(db, a.project.id, [{ event: 'late', timestamp: at('2024-05-04T09:00:00') }]);
  await db.execute(sql`update query_cache set last_refresh = last_refresh - interval '4 minutes'
    where project_id = ${a.project.id}`);
  t.same((await post(q)).body.results, [[5]], 'four minutes old: still fresh');
  await db.execute(sql`update query_cache set last_refresh = last_refresh - interval '2 minutes'
    where project_id = ${a.project.id}`);
  const stale = await post(q, { refresh: 'async' });
  t.equal(stale.status, 202, 'async on a stale answer: 202 with that answer while it is computed again');
  t.same([stale.body.results, stale.body.is_cached], [[[5]], true]);
  t.match(stale.body.query_status, { complete: false, query_async: true });
  for (let i = 0; i < 200; i++) {
    const s = await call('query_retrieve', {
      key: a.key,
      params: { project_id: a.project.id, id: stale.body.query_status!.id },
    });
    if (s.status !== 202) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const fresh = await post(q);
  t.same([fresh.body.results, fresh.body.is_cached], [[[6]], true], 'the background answer was stored');
  await db.execute(sql`update query_cache set last_refresh = last_refresh - interval '6 minutes'
    where project_id = ${a.project.id}`);
  await insertEvents(db, a.project.id, [{ event: 'later', timestamp: at('2024-05-04T10:00:00') }]);
  const recomputed = await post(q);
  t.same([recomputed.body.results, recomputed.body.is_cached], [[[7]], false], 'no refresh: blocking when stale');
});

t.test('two projects with identical queries and different data never share an answer', async (t) => {
  const q = "select count() from events where event = 'signup' and timestamp < '2024-05-03'";
  const fromA = await post(q);
  const fromB = await post(q, {}, b);
  t.same([fromA.body.results, fromB.body.results], [[[3]], [[1]]]);
  t.equal(fromB.body.is_cached, false, "B computes its own: A's cached answer is not B's");
  t.not(fromA.body.cache_key, fromB.body.cache_key);
  const again = await post(q, {}, b);
  t.same([again.body.results, again.body.is_cached], [[[1]], true]);
  const keys = await db.execute(sql`select project_id from query_cache where cache_key = ${fromB.body.cache_key}`);
  t.same(
    (keys as unknown as { project_id: number }[]).map((r) => r.project_id),
    [b.project.id],
    "B's key names only B's row",
  );
});

t.test('an events query is cached only when both its bounds are pinned dates, as PostHog', async (t) => {
  const events = (after: string, before?: string) =>
    call('query_create', {
      key: a.key,
      params: { project_id: a.project.id },
      body: { query: { kind: 'EventsQuery', select: ['count()'], event: 'signup', after, before } },
    });
  const open = await events('-100y');
  t.same([open.body.results, open.body.is_cached], [[[4]], false]);
  t.equal(open.body.cache_target_age, open.body.last_refresh, 'a moving window is stale at once');
  t.equal((await events('-100y')).body.is_cached, false, 'so it is computed every time');
  const pinned = await events('2024-05-01T00:00:00Z', '2024-05-02T00:00:00Z');
  t.same([pinned.body.results, pinned.body.is_cached], [[[2]], false]);
  const cached = await events('2024-05-01T00:00:00Z', '2024-05-02T00:00:00Z');
  t.same([cached.body.results, cached.body.is_cached], [[[2]], true], 'a closed past window stays cached');
});

t.test('insight kinds: cached with their interval freshness', async (t) => {
  const trends = {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: 'signup', math: 'total' }],
    dateRange: { date_from: '2024-05-01', date_to: '2024-05-02' },
    interval: 'day',
  };
  const run = (refresh?: string) =>
    call('query_create', {
      key: a.key,
      params: { project_id: a.project.id },
      body: { query: trends as never, ...(refresh ? { refresh } : {}) },
    });
  const first = await run();
  t.same((first.body.results as { data: number[] }[])[0]!.data, [2, 1]);
  t.equal(first.body.is_cached, false);
  const lr = ms(first.body.last_refresh);
  t.equal(ms(first.body.cache_target_age) - lr, 6 * 3600_000, 'a daily insight: 6 hours');
  t.equal(ms(first.body.next_allowed_client_refresh) - lr, 15 * 60_000);
  await insertEvents(db, a.project.id, [{ event: 'signup', timestamp: at('2024-05-02T12:00:00') }]);
  const cached = await run();
  t.same([(cached.body.results as { data: number[] }[])[0]!.data, cached.body.is_cached], [[2, 1], true]);
  const forced = await run('force_blocking');
  t.same((forced.body.results as { data: number[] }[])[0]!.data, [2, 2]);
});

t.test('bad input and access', async (t) => {
  const bad = await post('select nope from events');
  t.same([bad.status, bad.body.type], [400, 'validation_error'], 'a bad query is never cached: a 400');
  const refresh = await post(SIGNUPS, { refresh: 'sometimes' });
  t.same([refresh.status, refresh.body.attr], [400, 'refresh']);
  const override = await post(SIGNUPS, { filters_override: { date_from: 7 } });
  t.same([override.status, override.body.attr], [400, 'filters_override__date_from']);
  const noScope = await makeKey(db, a.user, ['insight:read']);
  t.equal(
    (await call('query_create', { key: noScope, params: { project_id: a.project.id }, body: {} as never })).status,
    403,
  );
  const other = await call('query_create', {
    key: b.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query: SIGNUPS } },
  });
  t.ok([403, 404].includes(other.status), `another project's path: ${other.status}`);
  t.equal((await call('query_create', { params: { project_id: a.project.id }, body: {} as never })).status, 401);
});
