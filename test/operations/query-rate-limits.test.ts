// PostHog's Query API throttles: `api_queries_burst` (240/minute) and `api_queries_sustained`
// (2,400/hour), per personal API key as PostHog's PersonalApiKeyRateThrottle keys them, on every
// operation of the Query API (both route families) in place of the general throttles; over them a 429
// with Retry-After in PostHog's shape.
import t from 'tap';
import { ApiError } from '../../src/core/errors.js';
import { loadConfig } from '../../src/config.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeTenant } from '../helpers/factories.js';

t.test("PostHog's rates by default", async (t) => {
  const config = loadConfig({});
  t.same([config.rateLimitQueryBurst, config.rateLimitQuerySustained], ['240/minute', '2400/hour']);
  t.equal(config.queryMaxBytes, 50 * 1024 * 1024);
  const custom = loadConfig({ RATE_LIMIT_QUERY_BURST: '10/second', QUERY_MAX_BYTES: '1000' });
  t.same([custom.rateLimitQueryBurst, custom.queryMaxBytes], ['10/second', 1000]);
});

t.test('the query throttles, per key', async (t) => {
  const ctx = await buildTestApp(t, {
    rateLimits: true,
    rateLimitQueryBurst: '3/minute',
    rateLimitQuerySustained: '5/hour',
  });
  const { call, db } = ctx;
  const a = await makeTenant(db);
  const params = { project_id: a.project.id };
  const body = { query: { kind: 'HogQLQuery' as const, query: 'select 1' } };

  t.equal((await call('query_create', { key: a.key, params, body })).status, 200);
  t.equal((await call('environments_query_create', { key: a.key, params, body })).status, 200, 'environments');
  const started = await call('query_create', { key: a.key, params, body: { ...body, refresh: 'force_async' } });
  t.equal(started.status, 202, 'three queries in a minute');
  const over = await call('query_retrieve', { key: a.key, params: { ...params, id: started.body.query_status.id } });
  t.equal(over.status, 429, 'the fourth (a status read counts too) is throttled');
  t.same(over.body, { type: 'throttled_error', code: 'throttled', detail: 'Request was throttled.', attr: null });
  const retry = Number(over.headers['retry-after']);
  t.ok(retry >= 1 && retry <= 60, `Retry-After ${retry} s, within the minute`);
  t.equal((await call('query_create', { key: a.key, params, body })).status, 429);

  const other = await call('projects_list', { key: a.key });
  t.equal(other.status, 200, 'the rest of the API keeps its own throttles');
  const second = await makeKey(db, a.user);
  t.equal(
    (await call('query_create', { key: second, params, body })).status,
    200,
    'another key has its own budget, as PostHog keys the throttle by key',
  );

  // The sustained rate, on the same limiter, a few minutes on.
  const limiter = ctx.app.queryRateLimiter!;
  const now = Date.now() + 120_000;
  for (let i = 0; i < 3; i++) await limiter.hit('probe', now + i);
  for (let i = 0; i < 2; i++) await limiter.hit('probe', now + 61_000 + i);
  const sustained = await limiter.hit('probe', now + 62_000).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(sustained instanceof ApiError && sustained.statusCode === 429, 'five in an hour, then throttled');
  t.ok(Number((sustained as ApiError).headers['retry-after']) > 60, 'until the hour ends');
});
