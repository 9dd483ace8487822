// Insight results through the PostgreSQL cache: PostHog's refresh modes, freshness, a forced refresh, one
// result for two server processes, and no result of one project ever served to another. The counts are
// worked out by hand from the events inserted below.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { flushHits } from '../../src/insights/cache-queries.js';
import { buildTestApp, json } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { checkPosthogInsight, trendsQuery } from './helpers.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const at = (s: string) => new Date(`${s}Z`);
// A: May 1 two pageviews, May 2 one. B: the same names, May 1 one, May 3 four.
await insertEvents(db, a.project.id, [
  { event: '$pageview', timestamp: at('2024-05-01T10:00:00') },
  { event: '$pageview', timestamp: at('2024-05-01T11:00:00') },
  { event: '$pageview', timestamp: at('2024-05-02T09:00:00') },
  { event: 'other', timestamp: at('2024-05-02T09:00:00') },
]);
await insertEvents(db, b.project.id, [
  { event: '$pageview', timestamp: at('2024-05-01T10:00:00') },
  ...Array.from({ length: 4 }, () => ({ event: '$pageview', timestamp: at('2024-05-03T10:00:00') })),
]);

async function insight(tenant: typeof a) {
  const res = await call('insights_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { name: 'Pageviews', query: trendsQuery() as never },
  });
  return json<'insights_create'>(res).id;
}
const ia = await insight(a);
const ib = await insight(b);
const read = async (refresh?: string, tenant = a, id = ia) => {
  const res = await call('insights_retrieve', {
    key: tenant.key,
    params: { project_id: tenant.project.id, id },
    query: refresh ? { refresh } : {},
  });
  t.equal(res.status, 200, res.raw.slice(0, 300));
  return res.body;
};
const data = (body: { result: unknown }) => (body.result as { data: number[] }[] | null)?.[0]?.data ?? null;

t.test('a plain read never computes; blocking computes once, then serves the cache', async (t) => {
  const cold = await read();
  t.equal(cold.result, null);
  t.equal(cold.is_cached, false);
  t.equal(cold.last_refresh, null);
  t.equal((await read('force_cache')).result, null, 'force_cache neither');
  const first = await read('blocking');
  t.same(data(first), [2, 1, 0]);
  t.equal(first.is_cached, false);
  t.ok(first.last_refresh);
  t.equal(first.timezone, 'UTC');
  t.match(first.cache_key, /^cache_[0-9a-f]{40}$/);
  const age = Date.parse(first.cache_target_age!) - Date.parse(first.last_refresh!);
  t.equal(age, 6 * 3600_000, "a daily insight is fresh for PostHog's 6 hours");
  const nextAllowed = Date.parse(first.next_allowed_client_refresh!) - Date.parse(first.last_refresh!);
  t.equal(nextAllowed, 15 * 60_000);
  checkPosthogInsight(t, first as never);
  const again = await read();
  t.same(data(again), [2, 1, 0], 'a plain read now serves the cached result');
  t.equal(again.is_cached, true);
  t.equal(again.last_refresh, first.last_refresh);
  t.equal((await read('blocking')).last_refresh, first.last_refresh, 'fresh: blocking does not recompute');
});

t.test('new events show on a forced refresh, not before', async (t) => {
  await insertEvents(db, a.project.id, [{ event: '$pageview', timestamp: at('2024-05-03T12:00:00') }]);
  t.same(data(await read('blocking')), [2, 1, 0], 'still the fresh cached result');
  const forced = await read('force_blocking');
  t.same(data(forced), [2, 1, 1]);
  t.equal(forced.is_cached, false);
  const cached = await read();
  t.same(data(cached), [2, 1, 1]);
  t.equal(cached.last_refresh, forced.last_refresh);
});

t.test('a stale result is recomputed by blocking and served as it is by force_cache', async (t) => {
  await db.execute(sql`update query_cache set last_refresh = last_refresh - interval '7 hours'
    where project_id = ${a.project.id}`);
  await insertEvents(db, a.project.id, [{ event: '$pageview', timestamp: at('2024-05-02T12:00:00') }]);
  const stale = await read();
  t.same(data(stale), [2, 1, 1], 'force_cache serves it stale');
  t.equal(stale.is_cached, true);
  const fresh = await read('blocking');
  t.same(data(fresh), [2, 2, 1]);
  t.equal(fresh.is_cached, false);
});

t.test('two projects with the same query never share a result', async (t) => {
  const fromB = await read('blocking', b, ib);
  t.same(data(fromB), [1, 0, 4]);
  t.same(data(await read(undefined, a, ia)), [2, 2, 1]);
  const rows = await db.execute(sql`select project_id, cache_key from query_cache order by project_id`);
  const keys = rows as unknown as { project_id: number; cache_key: string }[];
  t.equal(new Set(keys.map((k) => k.cache_key)).size, keys.length, 'a key per project');
});

t.test('two server processes on one database see one computed result', async (t) => {
  const other = await buildApp({ config: ctx.app.config, database: ctx.database });
  t.teardown(() => other.close());
  const forced = await read('force_blocking');
  const res = await other.inject({
    method: 'GET',
    url: `/api/projects/${a.project.id}/insights/${ia}/?refresh=blocking`,
    headers: { authorization: `Bearer ${a.key}` },
  });
  t.equal(res.statusCode, 200);
  t.equal(res.json().is_cached, true, 'the other process serves what this one computed');
  t.equal(res.json().last_refresh, forced.last_refresh);
});

t.test('async modes start a background computation and say so in query_status', async (t) => {
  await insertEvents(db, a.project.id, [{ event: '$pageview', timestamp: at('2024-05-01T12:00:00') }]);
  const started = await read('force_async');
  t.equal(started.result, null);
  t.equal(started.query_status?.complete, false);
  const id = started.query_status!.id as string;
  for (let i = 0; i < 100; i++) {
    const s = await call('query_retrieve', { key: a.key, params: { project_id: a.project.id, id } });
    if (s.status !== 202) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const done = await read();
  t.same(data(done), [3, 2, 1], 'the background result is in the cache');
  t.equal(done.is_cached, true);
  t.equal((await read('async')).query_status, null, 'fresh: async serves the cache');
});

t.test("hits and misses are counted per key; a process's held answer gives way to a newer one", async (t) => {
  const query = trendsQuery({ dateRange: { date_from: '2024-05-01', date_to: '2024-05-02' } });
  const made = await call('insights_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 'Two days', query: query as never },
  });
  const id = json<'insights_create'>(made).id;
  const first = await read('blocking', a, id);
  for (let i = 0; i < 3; i++) await read(undefined, a, id);
  const forced = await read('force_blocking', a, id);
  t.equal((await read('blocking', a, id)).last_refresh, forced.last_refresh, 'fresh: a hit');
  await flushHits(db);
  const [counts] = (await db.execute(
    sql`select hits, misses from query_cache where project_id = ${a.project.id} and cache_key = ${first.cache_key}`,
  )) as unknown as { hits: number; misses: number }[];
  t.same(counts, { hits: 4, misses: 2 }, 'three plain reads and a fresh blocking one; two computations');

  // This process holds the answer it read; another process recomputes it after new events.
  const before = data(await read(undefined, a, id));
  await insertEvents(db, a.project.id, [{ event: '$pageview', timestamp: at('2024-05-02T10:00:00') }]);
  const other = await buildApp({ config: ctx.app.config, database: ctx.database });
  t.teardown(() => other.close());
  const res = await other.inject({
    method: 'GET',
    url: `/api/projects/${a.project.id}/insights/${id}/?refresh=force_blocking`,
    headers: { authorization: `Bearer ${a.key}` },
  });
  const recomputed = res.json() as { last_refresh: string; result: { data: number[] }[] };
  t.same(recomputed.result[0]!.data, [before![0]!, before![1]! + 1], 'one more pageview on May 2');
  const now = await read(undefined, a, id);
  t.same(data(now), recomputed.result[0]!.data, 'this process serves the newer answer, not the one it held');
  t.equal(now.last_refresh, recomputed.last_refresh);
});
