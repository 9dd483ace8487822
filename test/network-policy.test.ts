// Tenant-supplied addresses (plugin urls, batch export destinations) against the network policy: the
// app here runs with ALLOW_PRIVATE_NETWORKS narrowed to 127.0.0.1/32 or unset, and every server the
// tests aim at is real and listens on 127.0.0.0/8, so a hole shows as a request that arrives.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import t from 'tap';
import { buildTestApp } from './helpers/app.js';
import { captureServer, destinationDatabase, startWorker, waitFor } from './helpers/batch-exports.js';
import { insertEvents, spread } from './helpers/event-rows.js';
import { makeTenant } from './helpers/factories.js';
import { archiveFiles, zipArchive } from './helpers/plugins.js';

const POLICY = /^Refused by network policy: .* is, or resolves to, a private or reserved address\.$/;
// Only 127.0.0.1 itself is allowed: the rest of 127.0.0.0/8 stands for the private networks.
const ctx = await buildTestApp(t, { allowPrivateNetworks: ['127.0.0.1/32'] });
const { call, db } = ctx;
await startWorker(ctx);
const a = await makeTenant(db);
// And one with the default: no private network at all, so even `localhost` is refused.
const strictCtx = await buildTestApp(t, { allowPrivateNetworks: [] });
await startWorker(strictCtx);
const strict = { ctx: strictCtx, tenant: await makeTenant(strictCtx.db) };

interface Recorder {
  port: number;
  hits: string[];
}

/** A real HTTP server on `host` that records each request and answers with `answer`. */
async function server(
  host: string,
  answer: (req: IncomingMessage) => { status: number; headers?: Record<string, string>; body?: Buffer | string },
): Promise<Recorder> {
  const hits: string[] = [];
  const s = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    const { status, headers = {}, body = '' } = answer(req);
    res.writeHead(status, headers).end(body);
  });
  await new Promise<void>((resolve) => s.listen(0, host, resolve));
  t.teardown(() => new Promise<void>((resolve) => s.close(() => resolve())));
  return { port: (s.address() as AddressInfo).port, hits };
}

const archive = zipArchive(archiveFiles('pipeline_destinations', 'Reached', '1.0.0'));
const install = (url: string, app = ctx, tenant = a) =>
  app.call('pipeline_destinations_create', {
    key: tenant.key,
    params: { organization_id: tenant.organization.id },
    body: { plugin_type: 'custom', url },
  });

t.test('plugin urls: private addresses in any written form are refused before anything is sent', async (t) => {
  const open = await server('127.0.0.2', () => ({ status: 200, body: archive }));
  const forms = [
    `http://127.0.0.2:${open.port}/a.zip`,
    `http://0x7f000002:${open.port}/a.zip`,
    `http://2130706434:${open.port}/a.zip`,
    `http://127.2:${open.port}/a.zip`,
    `http://0177.0.0.2:${open.port}/a.zip`,
    `http://[::ffff:127.0.0.2]:${open.port}/a.zip`,
    `http://[::ffff:7f00:2]:${open.port}/a.zip`,
  ];
  for (const url of forms) {
    const res = await install(url);
    t.equal(res.status, 400, url);
    t.equal(res.body.attr, 'url');
    t.match(res.body.detail, /Refused by network policy/, url);
  }
  // `0.0.0.0` and `::` connect to this machine's own listeners.
  for (const url of [
    `http://0.0.0.0:${open.port}/a.zip`,
    `http://[::]:${open.port}/a.zip`,
    `http://[::1]:${open.port}/a.zip`,
  ]) {
    t.match(await install(url), { status: 400, body: { attr: 'url', detail: /Refused by network policy/ } }, url);
  }
  t.same(open.hits, [], 'the server behind them was never asked');
});

t.test('plugin urls: a redirect to a private address is refused at that hop', async (t) => {
  const inside = await server('127.0.0.2', () => ({ status: 200, body: archive }));
  const outside = await server('127.0.0.1', () => ({
    status: 302,
    headers: { location: `http://127.0.0.2:${inside.port}/a.zip` },
  }));
  const res = await install(`http://127.0.0.1:${outside.port}/a.zip`);
  t.match(res, { status: 400, body: { attr: 'url', detail: /Refused by network policy: 127\.0\.0\.2/ } });
  t.same(outside.hits, ['GET /a.zip'], 'the allowed server was asked');
  t.same(inside.hits, [], 'the private one it redirected to was not');

  // An endless chain of redirects between allowed addresses ends too.
  const loop = await server('127.0.0.1', (req) => ({ status: 307, headers: { location: `${req.url}x` } }));
  t.match(await install(`http://127.0.0.1:${loop.port}/a`), { status: 400, body: { detail: /too many redirects/ } });
  t.ok(loop.hits.length <= 6, `at most 5 redirects were followed (${loop.hits.length} requests)`);
});

t.test('plugin urls: a name is checked where it resolves, when connecting (localhost)', async (t) => {
  const local = await server('127.0.0.1', () => ({ status: 200, body: archive }));
  const res = await install(`http://localhost:${local.port}/a.zip`, strict.ctx, strict.tenant);
  t.match(res, { status: 400, body: { attr: 'url', detail: /Refused by network policy: localhost/ } });
  t.same(local.hits, [], 'nothing reached the server');
  // The same url where the operator allows loopback installs the plugin: the refusal above is the policy's.
  t.equal((await install(`http://localhost:${local.port}/a.zip`)).status, 201);
  t.same(local.hits, ['GET /a.zip']);
});

t.test('plugin urls: an open port and a closed one give the same answer', async (t) => {
  const open = await server('127.0.0.2', () => ({ status: 404, body: 'not here' }));
  const { deadPort: closed } = await deadPortOn('127.0.0.2');
  const detail = async (app: typeof ctx, tenant: typeof a, port: number) => {
    const res = await install(`http://127.0.0.2:${port}/a.zip`, app, tenant);
    t.equal(res.status, 400);
    return String(res.body.detail).replaceAll(String(port), 'PORT');
  };
  const refusedOpen = await detail(strict.ctx, strict.tenant, open.port);
  t.match(refusedOpen, /Refused by network policy/);
  t.equal(await detail(strict.ctx, strict.tenant, closed), refusedOpen, 'refused by policy either way');
  t.same(open.hits, []);

  // Where the network is allowed, a failure to connect names no cause a scan could read.
  const { deadPort } = await deadPortOn('127.0.0.1');
  const res = await install(`http://127.0.0.1:${deadPort}/a.zip`);
  t.equal(
    res.body.detail,
    `Could not download the plugin archive from http://127.0.0.1:${deadPort}/a.zip: Could not connect to ` +
      `http://127.0.0.1:${deadPort}.`,
  );
  t.notMatch(res.body.detail, /ECONN|EHOST|ETIMEDOUT|timeout/i);
});

async function deadPortOn(host: string): Promise<{ deadPort: number }> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, host, resolve));
  const deadPort = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return { deadPort };
}

t.test('the operator’s own PLUGIN_REPOSITORY_URL is trusted', async (t) => {
  const repo = await server('127.0.0.2', () => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '[]',
  }));
  strict.ctx.app.config.pluginRepositoryUrl = `http://127.0.0.2:${repo.port}/plugins.json`;
  const { tenant } = strict;
  const res = await strict.ctx.call('pipeline_destinations_repository_retrieve', {
    key: tenant.key,
    params: { organization_id: tenant.organization.id },
  });
  t.same(res.body, []);
  t.same(repo.hits, ['GET /plugins.json']);
});

const P = { project_id: a.project.id };
const createExport = (destination: object) =>
  call('projects_batch_exports_create', {
    key: a.key,
    params: P,
    body: { name: 'x', destination, interval: 'hour', paused: true },
  });

t.test('batch export destinations: private literal addresses are refused on save, on the field', async (t) => {
  const cases: [object, string][] = [
    [{ type: 'HTTP', config: { url: 'http://0x7f000002:9/batch/', token: 't' } }, 'destination__config__url'],
    [{ type: 'HTTP', config: { url: 'http://[::1]:9/batch/', token: 't' } }, 'destination__config__url'],
    [
      { type: 'S3', config: { bucket_name: 'exports', region: 'us-east-1', endpoint_url: 'http://127.2:9' } },
      'destination__config__endpoint_url',
    ],
    [
      { type: 'S3', config: { bucket_name: 'exports', region: 'us-east-1', endpoint_url: 'http://0.0.0.0:9' } },
      'destination__config__endpoint_url',
    ],
  ];
  for (const host of [
    '127.0.0.2',
    '0177.0.0.2',
    '2130706434',
    '0x7f000002',
    '127.2',
    '::ffff:127.0.0.2',
    '[::1]',
    '0.0.0.0',
    '::',
  ]) {
    cases.push([
      { type: 'Postgres', config: { host, database: 'd', user: 'u', password: 'p' } },
      'destination__config__host',
    ]);
  }
  for (const [destination, attr] of cases) {
    const res = await createExport(destination);
    t.equal(res.status, 400, JSON.stringify(destination));
    t.equal(res.body.attr, attr);
    t.match(res.body.detail, POLICY);
  }
  // A Unix socket folder (which the PostgreSQL client would connect to) or a list of hosts is no host.
  for (const host of ['/var/run/postgresql', '127.0.0.1,10.0.0.1', 'db:5432', 'a b']) {
    const res = await createExport({ type: 'Postgres', config: { host, database: 'd', user: 'u', password: 'p' } });
    t.match(
      res,
      { status: 400, body: { attr: 'destination__config__host', detail: /is not a valid host name or IP address/ } },
      host,
    );
  }

  // A PATCH that points an export at one is refused too, and changes nothing.
  const ok = await createExport({ type: 'HTTP', config: { url: 'http://127.0.0.1:9/batch/', token: 't' } });
  t.equal(ok.status, 201, 'an allowed address is saved');
  const patch = await call('projects_batch_exports_partial_update', {
    key: a.key,
    params: { ...P, id: ok.body.id },
    body: { destination: { type: 'HTTP', config: { url: 'http://2130706434:9/batch/' } } },
  });
  t.match(patch, { status: 400, body: { attr: 'destination__config__url', detail: POLICY } });
  const after = await call('projects_batch_exports_retrieve', { key: a.key, params: { ...P, id: ok.body.id } });
  t.equal(after.body.destination.config.url, 'http://127.0.0.1:9/batch/');
});

const HOUR = 3_600_000;
const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR);
const end = new Date(start.getTime() + HOUR);
for (const { ctx: c, tenant } of [{ ctx, tenant: a }, strict])
  await insertEvents(c.db, tenant.project.id, spread(5, start, end));

/** Creates the export (a save the policy lets through) and backfills the hour of events; answers its run. */
async function runExport(destination: object, { ctx: c, tenant } = { ctx, tenant: a }) {
  const P = { project_id: tenant.project.id };
  const exp = await c.call('projects_batch_exports_create', {
    key: tenant.key,
    params: P,
    body: { name: 'x', destination, interval: 'hour', paused: true },
  });
  if (exp.status !== 201) throw new Error(JSON.stringify(exp.body));
  const ids = { ...P, batch_export_id: exp.body.id };
  const backfill = await c.call('projects_batch_exports_backfills_create', {
    key: tenant.key,
    params: ids,
    body: { start_at: start.toISOString(), end_at: end.toISOString() },
  });
  await waitFor('the backfill to finish', async () => {
    const b = await c.call('projects_batch_exports_backfills_retrieve', {
      key: tenant.key,
      params: { ...ids, id: backfill.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
  return (await c.call('projects_batch_exports_runs_list', { key: tenant.key, params: ids, query: { start: '-1d' } }))
    .body.results[0];
}

t.test('HTTP destination: a name that resolves to a private address is refused when the run connects', async (t) => {
  const target = await captureServer(t);
  const run = await runExport(
    { type: 'HTTP', config: { url: target.url.replace('127.0.0.1', 'localhost'), token: 'phc_x' } },
    strict,
  );
  t.match(run, { status: 'Failed', latest_error: POLICY }, 'failed, by the policy');
  t.same(target.requests, [], 'no event left the server');
  // Where loopback is allowed the same export delivers: the refusal above is the policy's.
  const allowed = await runExport({
    type: 'HTTP',
    config: { url: target.url.replace('127.0.0.1', 'localhost'), token: 'phc_x' },
  });
  t.equal(allowed.status, 'Completed');
  t.equal(target.requests.length, 1);
});

t.test('HTTP destination: a redirect to a private address is not followed', async (t) => {
  const hidden = await server('127.0.0.2', () => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"status":1}',
  }));
  const outside = await server('127.0.0.1', () => ({
    status: 307,
    headers: { location: `http://127.0.0.2:${hidden.port}/batch/` },
  }));
  const run = await runExport({
    type: 'HTTP',
    config: { url: `http://127.0.0.1:${outside.port}/batch/`, token: 'phc_x' },
  });
  t.match(run, { status: 'Failed', latest_error: POLICY });
  t.same(outside.hits, ['POST /batch/']);
  t.same(hidden.hits, [], 'the redirect target got nothing');
});

t.test('S3 destination: an endpoint whose name resolves to a private address is refused when connecting', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
  const s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: [{ name: 'exports' }],
  });
  const { port } = await s3.run();
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  t.teardown(async () => {
    client.destroy();
    await s3.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const objects = async () =>
    ((await client.send(new ListObjectsV2Command({ Bucket: 'exports' }))).Contents ?? []).length;
  const config = {
    bucket_name: 'exports',
    region: 'us-east-1',
    aws_access_key_id: 'S3RVER',
    aws_secret_access_key: 'S3RVER',
  };
  const run = await runExport({ type: 'S3', config: { ...config, endpoint_url: `http://localhost:${port}` } }, strict);
  t.match(run, { status: 'Failed', latest_error: POLICY });
  t.equal(await objects(), 0, 'no object was written');
  const allowed = await runExport({ type: 'S3', config: { ...config, endpoint_url: `http://localhost:${port}` } });
  t.equal(allowed.status, 'Completed', 'where loopback is allowed, the same export writes');
  t.equal(await objects(), 1);
});

t.test('Postgres destination: a name that resolves to a private address is refused when connecting', async (t) => {
  const dest = await destinationDatabase(t);
  if (!dest) {
    t.plan(0, 'no PostgreSQL on this machine to aim at');
    return;
  }
  const config = {
    host: 'localhost',
    port: Number(dest.url.port || 5432),
    database: dest.url.pathname.slice(1),
    user: decodeURIComponent(dest.url.username),
    password: decodeURIComponent(dest.url.password) || 'x',
    table_name: 'reached',
  };
  const reached = async () => (await dest.sql`select to_regclass('public.reached')::text as name`)[0]!.name;
  const run = await runExport({ type: 'Postgres', config }, strict);
  t.match(run, { status: 'Failed', latest_error: POLICY });
  t.equal(await reached(), null, 'nothing was created in the database');
  const allowed = await runExport({ type: 'Postgres', config });
  t.equal(allowed.status, 'Completed', 'where loopback is allowed, the same export writes');
  t.equal(await reached(), 'reached');
});

t.test('destinations: where the network is allowed, a closed port fails with no cause a scan could read', async (t) => {
  const { deadPort } = await deadPortOn('127.0.0.1');
  const runs = await Promise.all([
    runExport({ type: 'HTTP', config: { url: `http://127.0.0.1:${deadPort}/batch/`, token: 'phc_x' } }),
    runExport({
      type: 'S3',
      config: {
        bucket_name: 'exports',
        region: 'us-east-1',
        endpoint_url: `http://127.0.0.1:${deadPort}`,
        aws_access_key_id: 'a',
        aws_secret_access_key: 'b',
      },
    }),
    runExport({
      type: 'Postgres',
      config: { host: '127.0.0.1', port: deadPort, database: 'd', user: 'u', password: 'p' },
    }),
  ]);
  t.same(
    runs.map((r) => [r.status, r.latest_error]),
    [
      ['Failed', `Could not reach http://127.0.0.1:${deadPort}.`],
      ['Failed', 'Could not connect to the S3 endpoint.'],
      ['Failed', `Could not connect to 127.0.0.1:${deadPort}.`],
    ],
  );
});
