// The destination test steps of PostHog's batch export interface, run against real destinations started here.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import t from 'tap';
import { captureServer, destinationDatabase } from '../helpers/batch-exports.js';
import { call, a, b, PA, makeExport } from '../helpers/batch-export-compat-app.js';

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
