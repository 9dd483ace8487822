// PostHog's current batch export interface: every field of its schema, PUT, the destination test
// steps (run against real destinations started here), run logs, filters and the sessions model.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { captureServer, destinationDatabase, startWorker, waitFor } from '../helpers/batch-exports.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
await startWorker(ctx);

const HOUR = 3_600_000;
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR);
const at = (h: number) => new Date(base.getTime() + h * HOUR);

const a = await makeTenant(db);
const b = await makeTenant(db);
const PA = { project_id: a.project.id };
const NOOP = { type: 'NoOp', config: {} };

async function makeExport(body: Record<string, unknown>, tenant = a) {
  const res = await call('projects_batch_exports_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { name: 'export', destination: NOOP, interval: 'hour', paused: true, ...body },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body;
}

/** Backfills hours [0, hours) and waits for it; the runs, oldest first. */
async function backfill(exp: { id: string }, hours: number) {
  const P = { ...PA, batch_export_id: exp.id };
  const made = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: at(0).toISOString(), end_at: at(hours).toISOString() },
  });
  if (made.status !== 201) throw new Error(JSON.stringify(made.body));
  await waitFor('the backfill to finish', async () => {
    const r = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: made.body.backfill_id },
    });
    return r.body.status !== 'Running' && r.body.status !== 'Starting' && r.body;
  });
  const runs = await call('projects_batch_exports_runs_list', {
    key: a.key,
    params: P,
    query: { ordering: 'data_interval_start', start: '-1d' },
  });
  return { made: made.body, runs: runs.body.results as any[] };
}

t.test('responses carry hogql_query, filters and destination.integration', async (t) => {
  const exp = await makeExport({
    hogql_query: 'SELECT event, properties.$browser AS browser FROM events',
    filters: [{ key: '$browser', operator: 'exact', value: 'Chrome', type: 'event' }],
  });
  t.equal(exp.hogql_query, 'SELECT event, properties.$browser AS browser FROM events');
  t.same(exp.filters, [{ key: '$browser', operator: 'exact', value: 'Chrome', type: 'event' }]);
  t.equal(exp.destination.integration, null);
  const plain = await makeExport({});
  t.equal(plain.hogql_query, '');
  t.equal(plain.filters, null);
  const got = await call('batch_exports_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, id: exp.id },
  });
  t.equal(got.status, 200);
  t.same(got.body.filters, exp.filters);
});

t.test('filters are checked and select the exported events', async (t) => {
  const bad = await call('projects_batch_exports_create', {
    key: a.key,
    params: PA,
    body: { name: 'x', destination: NOOP, interval: 'hour', filters: [{ key: 'k', operator: 'almost', value: 1 }] },
  });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', attr: 'filters', detail: /Operator "almost" is not supported/ });
  const persons = await call('projects_batch_exports_create', {
    key: a.key,
    params: PA,
    body: { name: 'x', model: 'persons', destination: NOOP, interval: 'hour', filters: [{ key: 'k', value: 'v' }] },
  });
  t.equal(persons.status, 400);
  t.equal(persons.body.attr, 'filters');

  await insertEvents(
    db,
    a.project.id,
    spread(6, at(0), at(1), (i) => ({ properties: { plan: i % 3 === 0 ? 'pro' : 'free' } })),
  );
  const exp = await makeExport({ filters: [{ key: 'plan', operator: 'exact', value: 'pro', type: 'event' }] });
  const { runs } = await backfill(exp, 1);
  t.equal(runs.length, 1);
  t.equal(runs[0].records_total_count, 2, 'only the matching events are exported');
});

t.test('PUT replaces at both scopes; another tenant gets 404 and nothing changes', async (t) => {
  const exp = await makeExport({ name: 'before' });
  const put = await call('projects_batch_exports_update', {
    key: a.key,
    params: { ...PA, id: exp.id },
    body: { name: 'after', destination: NOOP, interval: 'day' },
  });
  t.equal(put.status, 200);
  t.match(put.body, { name: 'after', interval: 'day', paused: true });
  const org = await call('batch_exports_update', {
    key: a.key,
    params: { organization_id: a.organization.id, id: exp.id },
    body: { name: 'org', destination: NOOP, interval: 'hour' },
  });
  t.equal(org.status, 200);
  t.equal(org.body.name, 'org');
  const missing = await call('projects_batch_exports_update', {
    key: a.key,
    params: { ...PA, id: exp.id },
    body: { name: 'x' },
  });
  t.equal(missing.status, 400);
  t.equal(missing.body.type, 'validation_error');
  t.equal(
    (
      await call('projects_batch_exports_update', {
        params: { ...PA, id: exp.id },
        body: { name: 'x', destination: NOOP, interval: 'hour' },
      })
    ).status,
    401,
  );
  const reader = await makeKey(db, a.user, ['batch_export:read']);
  t.equal(
    (
      await call('projects_batch_exports_update', {
        key: reader,
        params: { ...PA, id: exp.id },
        body: { name: 'x', destination: NOOP, interval: 'hour' },
      })
    ).status,
    403,
  );
  const body = { name: 'hijack', destination: NOOP, interval: 'hour' };
  t.equal(
    (await call('projects_batch_exports_update', { key: b.key, params: { ...PA, id: exp.id }, body })).status,
    403,
    "another tenant's project",
  );
  t.equal(
    (
      await call('projects_batch_exports_update', {
        key: b.key,
        params: { project_id: b.project.id, id: exp.id },
        body,
      })
    ).status,
    404,
    "another tenant's export on its own path",
  );
  t.equal(
    (
      await call('batch_exports_update', {
        key: b.key,
        params: { organization_id: b.organization.id, id: exp.id },
        body,
      })
    ).status,
    404,
  );
  const after = await call('projects_batch_exports_retrieve', { key: a.key, params: { ...PA, id: exp.id } });
  t.equal(after.body.name, 'org');
});

t.test('test describes the steps of a destination type', async (t) => {
  const s3 = await call('projects_batch_exports_test_retrieve', {
    key: a.key,
    params: PA,
    query: { destination: 'S3' },
  });
  t.equal(s3.status, 200);
  t.same(
    s3.body.steps.map((s: any) => [s.name, s.result]),
    [['Check S3 bucket exists', null]],
  );
  const pg = await call('batch_exports_test_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id },
    query: { destination: 'Postgres' },
  });
  t.equal(pg.body.steps.length, 2);
  t.equal((await call('projects_batch_exports_test_retrieve', { key: a.key, params: PA, query: {} })).status, 400);
  t.equal(
    (await call('projects_batch_exports_test_retrieve', { key: a.key, params: PA, query: { destination: 'NoOp' } }))
      .status,
    404,
  );
  t.equal(
    (await call('projects_batch_exports_test_retrieve', { params: PA, query: { destination: 'S3' } })).status,
    401,
  );
  t.equal(
    (await call('projects_batch_exports_test_retrieve', { key: b.key, params: PA, query: { destination: 'S3' } }))
      .status,
    403,
  );
});

t.test('run_test_step_new tests an HTTP destination through the network guard', async (t) => {
  const ok = await captureServer(t);
  const refusing = await captureServer(t, () => 401);
  const step = (url: string, n: number) =>
    call('projects_batch_exports_run_test_step_new_create', {
      key: a.key,
      params: PA,
      body: { step: n, destination: { type: 'HTTP', config: { url, token: 'phc_x' } } },
    });
  t.match((await step(ok.url, 0)).body, {
    name: 'Verify the URL answers',
    result: { status: 'Passed', message: null },
  });
  t.match((await step(ok.url, 1)).body, { result: { status: 'Passed' } });
  t.same(ok.requests.at(-1)!.body, { api_key: 'phc_x', historical_migration: true, batch: [] });
  t.match((await step(refusing.url, 1)).body, { result: { status: 'Failed', message: /refused the token \(401\)/ } });
  const guarded = await step('http://169.254.169.254/batch/', 0);
  t.equal(guarded.status, 400);
  t.equal(guarded.body.attr, 'destination__config__url');
  const missing = await call('projects_batch_exports_run_test_step_new_create', {
    key: a.key,
    params: PA,
    body: { destination: { type: 'HTTP', config: { url: ok.url } } },
  });
  t.equal(missing.status, 400, 'the config is checked as for a create');
  const outOfRange = await step(ok.url, 2);
  t.equal(outOfRange.status, 400);
  t.equal(outOfRange.body.attr, 'step');
  t.equal(
    (
      await call('projects_batch_exports_run_test_step_new_create', {
        key: b.key,
        params: PA,
        body: { destination: { type: 'HTTP', config: { url: ok.url, token: 'x' } } },
      })
    ).status,
    403,
  );
});

t.test('run_test_step tests a stored S3 destination, with the body laid over it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: [{ name: 'exports', configs: [] }],
  });
  const { port } = (await server.run()) as unknown as { port: number };
  t.teardown(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const config = {
    bucket_name: 'exports',
    region: 'us-east-1',
    endpoint_url: `http://127.0.0.1:${port}`,
    aws_access_key_id: 'S3RVER',
    aws_secret_access_key: 'S3RVER',
  };
  const exp = await makeExport({ destination: { type: 'S3', config } });
  const run = (body: object, key = a.key, params: Record<string, string | number> = { ...PA, id: exp.id }) =>
    call('projects_batch_exports_run_test_step_create', { key, params, body });
  t.match((await run({ step: 0 })).body, { name: 'Check S3 bucket exists', result: { status: 'Passed' } });
  t.match((await run({ destination: { config: { bucket_name: 'nope' } } })).body, {
    result: { status: 'Failed', message: "Bucket 'nope' does not exist or we don't have permissions to use it" },
  });
  const moved = await run({ destination: { config: { endpoint_url: 'http://127.0.0.2:1' } } });
  t.equal(moved.status, 400, 'the stored secret is not sent to a new endpoint');
  t.equal(moved.body.attr, 'destination__config__aws_secret_access_key');
  const org = await call('batch_exports_run_test_step_create', {
    key: a.key,
    params: { organization_id: a.organization.id, id: exp.id },
    body: {},
  });
  t.match(org.body, { result: { status: 'Passed' } });
  t.equal((await run({}, b.key, { project_id: b.project.id, id: exp.id })).status, 404, "another tenant's export");
  t.equal((await run({}, b.key)).status, 403);
});

t.test('run_test_step_new tests a PostgreSQL destination', async (t) => {
  const dest = await destinationDatabase(t);
  if (!dest) {
    t.plan(0, 'no PostgreSQL server to export into');
    return;
  }
  const { url } = dest;
  const config = {
    host: url.hostname,
    port: Number(url.port || 5432),
    database: url.pathname.slice(1),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password) || 'x',
  };
  const step = (n: number, extra: object = {}) =>
    call('projects_batch_exports_run_test_step_new_create', {
      key: a.key,
      params: PA,
      body: { step: n, destination: { type: 'Postgres', config: { ...config, ...extra } } },
    });
  const connect = await step(0);
  t.match(connect.body, { name: 'Verify connection to PostgreSQL' });
  t.equal(connect.body.result.status, 'Passed', connect.body.result.message);
  t.match((await step(1)).body, { result: { status: 'Passed' } });
  t.match((await step(0, { database: 'no_such_db' })).body, { result: { status: 'Failed', message: /no_such_db/ } });
});

t.test('run logs are the entries of that run', async (t) => {
  await insertEvents(db, a.project.id, spread(3, at(2), at(3)));
  const exp = await makeExport({});
  const { runs } = await backfill(exp, 3);
  t.equal(runs.length, 3);
  const P = { ...PA, batch_export_id: exp.id };
  for (const run of runs) {
    const logs = await call('projects_batch_exports_runs_logs_retrieve', { key: a.key, params: { ...P, id: run.id } });
    t.equal(logs.status, 200);
    t.ok(logs.body.count > 0);
    t.ok(logs.body.results.every((l: any) => l.instance_id === run.id && l.log_source_id === exp.id));
  }
  const org = await call('batch_exports_runs_logs_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: exp.id, id: runs[0].id },
    query: { level: ['ERROR'] },
  });
  t.equal(org.status, 200);
  t.equal(org.body.count, 0);
  t.equal(
    (
      await call('projects_batch_exports_runs_logs_retrieve', {
        key: b.key,
        params: { project_id: b.project.id, batch_export_id: exp.id, id: runs[0].id },
      })
    ).status,
    404,
  );
  t.equal(
    (await call('projects_batch_exports_runs_logs_retrieve', { key: b.key, params: { ...P, id: runs[0].id } })).status,
    403,
  );
  t.equal((await call('projects_batch_exports_runs_logs_retrieve', { params: { ...P, id: runs[0].id } })).status, 401);
});

t.test('the sessions model exports sessions by their last event', async (t) => {
  const c = await makeTenant(db);
  const sess = (id: string, url: string) => ({ properties: { $session_id: id, $current_url: url } });
  // s1 lies in hour 0; s2 starts in hour 0 and ends in hour 1; events without a session are not sessions.
  await insertEvents(db, c.project.id, [
    ...spread(3, at(0), at(0.5), (i) => ({ ...sess('s1', `/a${i}`), event: i === 0 ? '$pageview' : 'click' })),
    ...spread(2, at(0.5), at(1), () => ({ ...sess('s2', '/b'), event: 'click' })),
    ...spread(2, at(1), at(1.5), () => ({ ...sess('s2', '/c'), event: '$pageview' })),
    ...spread(4, at(0), at(2)),
  ]);
  const dest = await destinationDatabase(t);
  const destination = dest
    ? {
        type: 'Postgres',
        config: {
          host: dest.url.hostname,
          port: Number(dest.url.port || 5432),
          database: dest.url.pathname.slice(1),
          user: decodeURIComponent(dest.url.username),
          password: decodeURIComponent(dest.url.password) || 'x',
        },
      }
    : NOOP;
  const made = await call('projects_batch_exports_create', {
    key: c.key,
    params: { project_id: c.project.id },
    body: { name: 's', model: 'sessions', destination, interval: 'hour', paused: true },
  });
  t.equal(made.status, 201, JSON.stringify(made.body));
  t.equal(made.body.model, 'sessions');
  const P = { project_id: c.project.id, batch_export_id: made.body.id };
  const bf = await call('projects_batch_exports_backfills_create', {
    key: c.key,
    params: P,
    body: { start_at: at(0).toISOString(), end_at: at(2).toISOString() },
  });
  await waitFor('the sessions backfill', async () => {
    const r = await call('projects_batch_exports_backfills_retrieve', {
      key: c.key,
      params: { ...P, id: bf.body.backfill_id },
    });
    return r.body.status !== 'Running' && r.body.status !== 'Starting' && r.body;
  });
  const runs = await call('projects_batch_exports_runs_list', {
    key: c.key,
    params: P,
    query: { ordering: 'data_interval_start', start: '-1d' },
  });
  t.same(
    runs.body.results.map((r: any) => [r.status, r.records_total_count]),
    [
      ['Completed', 1],
      ['Completed', 1],
    ],
  );
  if (!dest) return;
  const rows = await dest.sql`select * from sessions order by session_id`;
  t.same(
    rows.map((r: any) => [
      r.session_id,
      Number(r.event_count),
      Number(r.pageview_count),
      r.entry_current_url,
      r.end_current_url,
    ]),
    [
      ['s1', 3, 1, '/a0', '/a2'],
      ['s2', 4, 2, '/b', '/c'],
    ],
  );
});
