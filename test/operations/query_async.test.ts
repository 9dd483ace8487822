import { sql } from 'drizzle-orm';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { rowsOf } from '../../src/db/queries/util.js';
import { RunRefused, runReadOnly } from '../../src/query/queries.js';
import { runApplicationName } from '../../src/query/status-queries.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { startServer } from '../helpers/server-process.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const config = ctx.app.config;

const a = await makeTenant(db);
const b = await makeTenant(db);
const params = { project_id: a.project.id };
await insertEvents(
  db,
  a.project.id,
  Array.from({ length: 12 }, (_, i) => ({ event: i % 3 ? '$pageview' : 'signup', distinct_id: `u${i}` })),
);
await insertEvents(
  db,
  b.project.id,
  Array.from({ length: 12 }, () => ({ event: 'secret' })),
);

const COUNT = 'select event, count() from events group by event order by event';
/** A cross join of 12^10 rows: it runs until cancelled or timed out. */
const SLOW =
  'select count() from events a, events b, events c, events d, events e, ' +
  'events f, events g, events h, events i, events j';

const post = (query: string, extra: Record<string, unknown> = {}, key = a.key, p = params) =>
  call('query_create', { key, params: p, body: { query: { kind: 'HogQLQuery', query }, ...extra } });
const status = (id: string, key = a.key, p: Record<string, string | number> = params) =>
  call('query_retrieve', { key, params: { ...p, id } });

/** Polls the status until it is no longer running (202). */
async function settled(id: string, key = a.key) {
  for (let i = 0; i < 300; i++) {
    const res = await status(id, key);
    if (res.status !== 202) return res;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`query ${id} still running`);
}

/**
 * The backends in an asynchronous query's transaction (which names them), as PostgreSQL reports them:
 * running a statement, or between the transaction's statements.
 */
async function activeRuns(): Promise<{ pid: number; application_name: string }[]> {
  return rowsOf(
    await db.execute(sql`select pid, application_name from pg_stat_activity
      where datname = current_database() and application_name like 'posthog-api:query:%'
        and state in ('active', 'idle in transaction')`),
  );
}

const recorded = async (id: string, projectId = a.project.id) =>
  rowsOf<{ backend_pid: number | null }>(
    await db.execute(sql`select backend_pid from query_statuses where project_id = ${projectId} and id = ${id}`),
  );

/** Waits for the run to record its backend (just before it sends its statement) and to be in its transaction. */
async function started(id: string, projectId = a.project.id) {
  await until('its backend to be recorded', async () => (await recorded(id, projectId))[0]?.backend_pid != null);
  await until('the statement to run', async () => (await activeRuns()).length === 1);
}

async function until(what: string, check: () => Promise<boolean>, ms = 10_000) {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - start;
}

t.test('refresh async: 202 on a miss, then 200 with the synchronous answer, which the cache then serves', async (t) => {
  const res = await post(COUNT, { refresh: 'async', client_query_id: 'mine-1' });
  t.equal(res.status, 202);
  t.match(res.body.query_status, {
    id: 'mine-1',
    team_id: a.project.id,
    complete: false,
    error: false,
    query_async: true,
    results: null,
    error_message: null,
    end_time: null,
  });
  t.match(res.body.cache_key, /^cache_[0-9a-f]{40}$/, "PostHog's CacheMissResponse names the key");
  t.ok(Date.parse(res.body.query_status.start_time), 'start_time');
  const accepted = Date.now();
  const done = await settled('mine-1');
  t.comment(`complete ${Date.now() - accepted} ms after the 202`);
  t.equal(done.status, 200);
  const qs = done.body.query_status;
  t.match(qs, { id: 'mine-1', complete: true, error: false, error_message: null });
  t.ok(Date.parse(qs.pickup_time) && Date.parse(qs.end_time), 'pickup_time and end_time');
  const sync = await post(COUNT);
  t.equal(sync.status, 200);
  t.same([sync.body.is_cached, sync.body.cache_key], [true, res.body.cache_key], 'the async answer was cached');
  const { timings: _a, ...asyncAnswer } = qs.results;
  const { timings: _s, ...syncAnswer } = sync.body;
  const cacheFields = ['is_cached', 'last_refresh', 'next_allowed_client_refresh', 'cache_target_age', 'cache_key'];
  for (const f of [...cacheFields, 'timezone', 'query_status']) delete (syncAnswer as Record<string, unknown>)[f];
  t.same(asyncAnswer, syncAnswer, 'the same answer as the synchronous call, timings and cache fields aside');
  t.same(qs.results.results, [
    ['$pageview', 8],
    ['signup', 4],
  ]);

  // Fresh in the cache: every mode but force_async answers it at once (PostHog's legacy `async` included).
  for (const body of [
    { refresh: 'async' },
    { refresh: 'lazy_async' },
    { refresh: 'async_except_on_cache_miss' },
    { async: true },
    { refresh: 'blocking', async: true },
    { refresh: 'blocking' },
    { refresh: 'force_cache' },
    {},
  ]) {
    const r = await post(COUNT, body);
    t.same([r.status, r.body.is_cached, r.body.query_status], [200, true, null], JSON.stringify(body));
  }
  const forced = await post(COUNT, { refresh: 'force_blocking' });
  t.same([forced.status, forced.body.is_cached], [200, false], 'force_blocking computes');
  const r = await post(COUNT, { refresh: 'force_async' });
  t.equal(r.status, 202, 'force_async always starts one');
  t.match(r.body.query_status.id, /^[0-9a-f]{32}$/, 'a new id, uuid hex');
  t.equal((await settled(r.body.query_status.id)).status, 200);
  // A miss in the other modes: async_except_on_cache_miss and legacy async.
  const missAsync = await post('select 1 as one', { async: true });
  t.equal(missAsync.status, 202, 'legacy async on a miss');
  await settled(missAsync.body.query_status.id);
  const missBlocking = await post('select 2 as two', { refresh: 'async_except_on_cache_miss' });
  t.same([missBlocking.status, missBlocking.body.results], [200, [[2]]], 'async_except_on_cache_miss blocks on a miss');
  const env = await call('environments_query_retrieve', { key: a.key, params: { ...params, id: 'mine-1' } });
  t.same([env.status, env.body.query_status.results.results], [200, qs.results.results], 'the environments route');

  const again = await post(COUNT, { refresh: 'force_async', client_query_id: 'mine-1' });
  t.equal(again.status, 202, 'an ended id may be reused');
  t.equal(again.body.query_status.id, 'mine-1');
  t.equal((await settled('mine-1')).status, 200);
});

t.test('validation: a bad query is a 400 at once and records nothing', async (t) => {
  const bad = await post('select nope from events', { refresh: 'async', client_query_id: 'bad-1' });
  t.same([bad.status, bad.body.type], [400, 'validation_error']);
  t.equal((await status('bad-1')).status, 404);
  const refresh = await post(COUNT, { refresh: 'sometimes' });
  t.same([refresh.status, refresh.body.attr], [400, 'refresh']);
  const long = await post(COUNT, { refresh: 'async', client_query_id: 'x'.repeat(201) });
  t.same([long.status, long.body.attr], [400, 'client_query_id']);
  const blank = await post(COUNT, { refresh: 'async', client_query_id: '' });
  t.same([blank.status, blank.body.attr], [400, 'client_query_id']);
  t.equal((await status('x'.repeat(201))).status, 404, 'an over-long id names nothing');
});

t.test('DELETE stops the running statement in the database; GET answers it as cancelled', async (t) => {
  const saved = config.queryTimeoutSeconds;
  config.queryTimeoutSeconds = 60;
  t.teardown(() => void (config.queryTimeoutSeconds = saved));
  const res = await post(SLOW, { refresh: 'async', client_query_id: 'slow-1' });
  t.equal(res.status, 202);
  await started('slow-1');
  t.equal((await status('slow-1')).status, 202, 'running');
  const [running] = await recorded('slow-1');
  t.equal(running!.backend_pid, (await activeRuns())[0]!.pid, 'the row records the backend');

  const twice = await post(SLOW, { refresh: 'async', client_query_id: 'slow-1' });
  t.same([twice.status, twice.body.attr], [400, 'client_query_id'], 'a running id cannot be reused');

  const del = await call('query_destroy', { key: a.key, params: { ...params, id: 'slow-1' } });
  t.equal(del.status, 204);
  const ms = await until('the statement to stop', async () => (await activeRuns()).length === 0);
  t.comment(`statement gone from pg_stat_activity ${ms} ms after DELETE answered`);
  const after = await settled('slow-1');
  t.equal(after.status, 400);
  t.match(after.body.query_status, { complete: true, error: true, error_message: 'Query cancelled', results: null });
  await new Promise((r) => setTimeout(r, 200));
  t.equal(
    (await status('slow-1')).body.query_status.error_message,
    'Query cancelled',
    'the runner does not overwrite it',
  );
  t.equal((await call('query_destroy', { key: a.key, params: { ...params, id: 'slow-1' } })).status, 204, 'again');
  t.equal((await post(COUNT)).status, 200, 'the next query runs');
});

t.test('a cancel that lands while the run is between its statements is not lost', async (t) => {
  // A cancel from another process once the backend is recorded, before its statement arrives: PostgreSQL
  // drops a cancel for a backend waiting for its next statement. The run is told (its signal) then, or
  // just after it sent the statement.
  const runWith = (abort: (stop: AbortController) => void) => {
    const stopped = new AbortController();
    return runReadOnly(db, sql`select json_build_array(1) as r from pg_sleep(5)`, 10_000, {
      applicationName: runApplicationName('00000000-0000-4000-8000-000000000000'),
      signal: stopped.signal,
      onBackend: async (pid) => {
        const [sent] = rowsOf<{ ok: boolean }>(await db.execute(sql`select pg_cancel_backend(${pid}) as ok`));
        t.ok(sent!.ok, 'the backend was signalled');
        abort(stopped);
        return true;
      },
    });
  };
  const before = await runWith((stop) => stop.abort()).catch((err: unknown) => err);
  t.ok(before instanceof RunRefused, 'told before it sent the statement: not sent');
  await t.rejects(
    runWith((stop) => setTimeout(() => stop.abort(), 0)),
    { message: /canceling statement due to user request/ },
    'told after: cancelled until it stops, not run to its end',
  );
  t.same(await activeRuns(), [], 'nothing left running');
});

t.test('a query cancelled while it waits for a slot never runs', async (t) => {
  const saved = config.queryTimeoutSeconds;
  config.queryTimeoutSeconds = 60;
  t.teardown(() => void (config.queryTimeoutSeconds = saved));
  // Every slot of the organization (QUERY_CONCURRENCY_PER_ORGANIZATION) busy, then one more query that has to wait.
  const busy = [];
  const slots = config.queryConcurrencyPerOrganization;
  for (let i = 0; i < slots; i++)
    busy.push((await post(SLOW, { refresh: 'async', client_query_id: `busy-${i}` })).body.query_status.id);
  await until('the slots to fill', async () => (await activeRuns()).length >= slots);
  // Slow too: had it started once a slot freed, its statement would still be running below.
  t.equal((await post(SLOW, { refresh: 'async', client_query_id: 'queued' })).status, 202);
  await new Promise((r) => setTimeout(r, 100));
  t.match((await status('queued')).body.query_status, { complete: false, pickup_time: null }, 'waiting');
  t.equal((await call('query_destroy', { key: a.key, params: { ...params, id: 'queued' } })).status, 204);
  for (const id of busy) await call('query_destroy', { key: a.key, params: { ...params, id } });
  await until('the slots to empty', async () => (await activeRuns()).length === 0);
  await new Promise((r) => setTimeout(r, 200));
  const queued = await status('queued');
  t.equal(queued.status, 400);
  t.match(queued.body.query_status, { error_message: 'Query cancelled', pickup_time: null }, 'never picked up');
});

t.test('the statement timeout is a 400 with its message', async (t) => {
  const saved = config.queryTimeoutSeconds;
  config.queryTimeoutSeconds = 1;
  t.teardown(() => void (config.queryTimeoutSeconds = saved));
  const res = await post(SLOW, { refresh: 'async' });
  const id = res.body.query_status.id;
  const done = await settled(id);
  t.equal(done.status, 400);
  t.match(done.body.query_status, {
    complete: true,
    error: true,
    error_message: /exceeded the time limit of 1 seconds/,
    results: null,
  });
  t.same(await activeRuns(), [], 'nothing left running');
});

t.test("another project's query is a 404 and cannot be cancelled", async (t) => {
  const saved = config.queryTimeoutSeconds;
  config.queryTimeoutSeconds = 60;
  t.teardown(() => void (config.queryTimeoutSeconds = saved));
  const theirs = await post(SLOW, { refresh: 'async', client_query_id: 'theirs' }, b.key, { project_id: b.project.id });
  t.equal(theirs.status, 202);
  await started('theirs', b.project.id);
  const read = await status('theirs');
  t.same([read.status, read.body.type], [404, 'invalid_request']);
  const del = await call('query_destroy', { key: a.key, params: { ...params, id: 'theirs' } });
  t.equal(del.status, 404);
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await activeRuns()).length, 1, 'still running');
  t.equal((await status('theirs', b.key, { project_id: b.project.id })).status, 202);
  t.equal((await status('theirs', a.key, { project_id: b.project.id })).status, 403, "a's key on b's path");
  t.equal(
    (await call('query_destroy', { key: b.key, params: { project_id: b.project.id, id: 'theirs' } })).status,
    204,
  );
  await until('their statement to stop', async () => (await activeRuns()).length === 0);
  t.equal((await status('nope')).status, 404, 'an unknown id');
});

t.test('auth: 401 without a key, 403 without query:read', async (t) => {
  await post(COUNT, { refresh: 'force_async', client_query_id: 'auth-1' });
  await settled('auth-1');
  t.equal((await status('auth-1', '')).status, 401);
  t.equal((await call('query_destroy', { params: { ...params, id: 'auth-1' } })).status, 401);
  const noScope = await makeKey(db, a.user, ['event_definition:read']);
  const read = await status('auth-1', noScope);
  t.same([read.status, read.body.detail], [403, "API key missing required scope 'query:read'"]);
  t.equal((await call('query_destroy', { key: noScope, params: { ...params, id: 'auth-1' } })).status, 403);
  t.equal((await post(COUNT, { refresh: 'async' }, noScope)).status, 403);
  const reader = await makeKey(db, a.user, ['query:read']);
  t.equal((await status('auth-1', reader)).status, 200);
  t.equal((await call('query_destroy', { key: reader, params: { ...params, id: 'auth-1' } })).status, 204);
});

t.test('a process that stops fails its unfinished queries and stops their statements', async (t) => {
  const saved = config.queryTimeoutSeconds;
  config.queryTimeoutSeconds = 60;
  t.teardown(() => void (config.queryTimeoutSeconds = saved));
  // A second server process on the same database.
  const other = await buildApp({ config, database: ctx.database });
  const res = await other.inject({
    method: 'POST',
    url: `/api/projects/${a.project.id}/query/`,
    headers: { authorization: `Bearer ${a.key}` },
    payload: { query: { kind: 'HogQLQuery', query: SLOW }, refresh: 'async', client_query_id: 'drained' },
  });
  t.equal(res.statusCode, 202);
  await started('drained');
  t.equal((await status('drained')).status, 202, 'this process sees it running');
  const start = Date.now();
  await other.close();
  t.comment(`closed in ${Date.now() - start} ms`);
  t.same(await activeRuns(), [], 'its statement stopped');
  const after = await status('drained');
  t.equal(after.status, 400);
  t.match(after.body.query_status.error_message, /server stopped before the query finished/);
});

t.test('a query whose backend died (kill -9 of its process) or whose expiry passed answers as failed', async (t) => {
  // A row as a killed process leaves it: running, its backend gone.
  await db.execute(sql`insert into query_statuses (project_id, id, backend_pid, backend_start, pickup_time, expires_at)
    values (${a.project.id}, 'orphan', pg_backend_pid(), now() - interval '1 day', now(), now() + interval '1 hour')`);
  const orphan = await status('orphan');
  t.equal(orphan.status, 400);
  t.match(orphan.body.query_status, { complete: true, error: true, error_message: /server running the query stopped/ });
  // Waiting for a slot (no backend yet): failed once its process's LISTEN connection is gone, not before.
  const goneOwner = 'posthog-api:listen:00000000-0000-4000-8000-000000000000';
  await db.execute(sql`insert into query_statuses (project_id, id, owner, expires_at) values
    (${a.project.id}, 'queued-gone', ${goneOwner}, now() + interval '1 hour'),
    (${a.project.id}, 'queued-here', ${ctx.database.listenerName}, now() + interval '1 hour')`);
  const gone = await status('queued-gone');
  t.match([gone.status, gone.body.query_status.error_message], [400, /server running the query stopped/]);
  t.equal((await status('queued-here')).status, 202, 'its process is alive: still waiting');
  await db.execute(sql`delete from query_statuses where project_id = ${a.project.id} and id = 'queued-here'`);
  await db.execute(sql`insert into query_statuses (project_id, id, expires_at)
    values (${a.project.id}, 'stale', now() - interval '1 second')`);
  t.equal((await status('stale')).status, 400, 'a run never picked up before its expiry');
  await db.execute(sql`insert into query_statuses (project_id, id, state, expires_at)
    values (${a.project.id}, 'old', 'complete', now() - interval '1 second')`);
  t.equal((await status('old')).status, 404, 'an ended status past its expiry is gone');
  t.equal((await post(COUNT, { refresh: 'force_async', client_query_id: 'next' })).status, 202);
  const [left] = rowsOf<{ n: number }>(
    await db.execute(
      sql`select count(*)::int as n from query_statuses where project_id = ${a.project.id} and id = 'old'`,
    ),
  );
  t.equal(left!.n, 0, 'expired rows are deleted when the project starts another query');
  await settled('next');
});

t.test('a server process killed with SIGKILL: its statement stops and its query answers as failed', async (t) => {
  const server = startServer({ DATABASE_URL: ctx.url, RATE_LIMITS: 'off', WORKER: '0', QUERY_TIMEOUT_SECONDS: '60' });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;
  const res = await fetch(`${base}/api/projects/${a.project.id}/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: SLOW }, refresh: 'async', client_query_id: 'killed' }),
  });
  t.equal(res.status, 202);
  await started('killed');
  t.equal((await status('killed')).status, 202, 'running');
  server.child.kill('SIGKILL');
  await server.exited;
  const ms = await until('the orphaned statement to stop', async () => (await activeRuns()).length === 0);
  t.comment(`orphaned statement gone ${ms} ms after the process died`);
  const after = await status('killed');
  t.equal(after.status, 400);
  t.match(after.body.query_status, { complete: true, error: true, error_message: /server running the query stopped/ });
});
