// Exports into real destinations started here on 127.0.0.1: an S3-compatible server, a PostgreSQL
// database and an HTTP server, each read back and compared with the events.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { insertEvents, insertPerson, spread, type TestEvent } from '../helpers/event-rows.js';
import { captureServer, destinationDatabase, startWorker, waitFor } from '../helpers/batch-exports.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
await startWorker(ctx);

const HOUR = 3_600_000;
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR);
const at = (h: number) => new Date(base.getTime() + h * HOUR);

const a = await makeTenant(db);
const person = await insertPerson(db, a.project.id, ['alice'], { email: 'alice@example.com' }, at(1));
// Hour 0: 40 events, hour 1: 25 (some by a known person), and noise outside the range.
const inserted = await insertEvents(db, a.project.id, [
  ...spread(40, at(0), at(1)),
  ...spread(25, at(1), at(2), (i) =>
    i % 5 === 0 ? { distinct_id: 'alice', person_id: person.id, elements_chain: 'a:href="/x"' } : {},
  ),
  ...spread(5, at(3), at(4)),
]);
const inHour = (h: number) => inserted.filter((e) => e.timestamp >= at(h) && e.timestamp < at(h + 1));
const uuids = (events: { uuid: string }[]) => events.map((e) => e.uuid).sort();

async function exportAndBackfill(destination: object, extra: Record<string, unknown> = {}, hours = 2) {
  const exp = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    // Paused, so the minute tick adds no scheduled run to what is counted; backfills run all the same.
    body: { name: 'export', destination, interval: 'hour', paused: true, ...extra },
  });
  if (exp.status !== 201) throw new Error(JSON.stringify(exp.body));
  const P = { project_id: a.project.id, batch_export_id: exp.body.id };
  const backfill = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: at(0).toISOString(), end_at: at(hours).toISOString() },
  });
  const done = await waitFor('the backfill to finish', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: backfill.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
  const runs = (
    await call('projects_batch_exports_runs_list', {
      key: a.key,
      params: P,
      query: { ordering: 'data_interval_start', start: '-1d' },
    })
  ).body.results;
  return { exp: exp.body, P, backfill: done, runs };
}

t.test('S3: JSON lines, gzip and brotli, read back from an S3-compatible server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: [{ name: 'exports' }],
  });
  const { port } = await server.run();
  t.teardown(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  t.teardown(() => client.destroy());
  const config = {
    bucket_name: 'exports',
    region: 'us-east-1',
    endpoint_url: endpoint,
    aws_access_key_id: 'S3RVER',
    aws_secret_access_key: 'S3RVER',
  };
  const read = async (key: string) => {
    const obj = await client.send(new GetObjectCommand({ Bucket: 'exports', Key: key }));
    return { bytes: Buffer.from(await obj.Body!.transformToByteArray()), encoding: obj.ContentEncoding };
  };
  const list = async (prefix: string) =>
    ((await client.send(new ListObjectsV2Command({ Bucket: 'exports', Prefix: prefix }))).Contents ?? [])
      .map((o) => o.Key!)
      .sort();

  const { runs, backfill } = await exportAndBackfill({
    type: 'S3',
    config: { ...config, prefix: 'posthog/events/', compression: 'gzip' },
  });
  t.equal(backfill.status, 'Completed');
  t.same(
    await list('posthog/events/'),
    [0, 1].map((h) => `posthog/events/${at(h).toISOString()}-${at(h + 1).toISOString()}.jsonl.gz`),
    'one object per interval, named after it',
  );
  for (const [h, run] of runs.entries()) {
    const { bytes, encoding } = await read(`posthog/events/${at(h).toISOString()}-${at(h + 1).toISOString()}.jsonl.gz`);
    t.equal(encoding, 'gzip');
    t.equal(run.bytes_exported, bytes.length, 'bytes_exported is the object size');
    const lines = gunzipSync(bytes)
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.equal(run.records_completed, inHour(h).length);
    t.same(lines.map((l) => l.uuid).sort(), uuids(inHour(h)), `hour ${h}: exactly its events`);
    const byUuid = new Map(inHour(h).map((e) => [e.uuid, e] as [string, TestEvent]));
    const sample = lines.find((l) => l.distinct_id === 'alice') ?? lines[0];
    const original = byUuid.get(sample.uuid)!;
    t.same(Object.keys(sample), [
      'uuid',
      'event',
      'properties',
      'distinct_id',
      'team_id',
      'timestamp',
      'created_at',
      'elements_chain',
      'person_id',
      'person_properties',
    ]);
    t.match(sample, {
      event: '$pageview',
      properties: original.properties,
      distinct_id: original.distinct_id,
      team_id: a.project.id,
      timestamp: original.timestamp.toISOString().replace('Z', '000Z'),
      elements_chain: original.elements_chain,
    });
    if (h === 1)
      t.match(
        sample,
        { person_id: person.uuid, person_properties: { email: 'alice@example.com' } },
        'the person is joined',
      );
  }

  const hog = await exportAndBackfill(
    { type: 'S3', config: { ...config, prefix: 'chrome', compression: 'brotli' } },
    {
      hogql_query:
        'SELECT uuid, event, properties.$browser AS browser, properties.n FROM events WHERE properties.$browser = ' +
        "'Chrome' AND properties.n >= 10",
    },
    1,
  );
  const [key] = await list('chrome/');
  t.ok(key?.endsWith('.jsonl.br'));
  const lines = brotliDecompressSync((await read(key!)).bytes)
    .toString('utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  const expected = inHour(0).filter((e) => e.properties.$browser === 'Chrome' && Number(e.properties.n) >= 10);
  t.same(lines.map((l) => l.uuid).sort(), uuids(expected), 'the WHERE clause selects the events');
  t.same(Object.keys(lines[0]), ['uuid', 'event', 'browser', 'n'], 'exactly the selected fields, by alias');
  t.equal(hog.runs[0].records_total_count, expected.length);
});

t.test('Postgres: a table created, rows inserted, a retried run duplicates nothing', async (t) => {
  const dest = await destinationDatabase(t);
  if (!dest) {
    t.plan(0, 'no PostgreSQL answers on 127.0.0.1:5432 to export into');
    return;
  }
  const config = {
    host: dest.url.hostname,
    port: Number(dest.url.port || 5432),
    database: dest.url.pathname.slice(1),
    user: decodeURIComponent(dest.url.username) || 'postgres',
    password: decodeURIComponent(dest.url.password) || 'unused',
    schema: 'analytics',
    table_name: 'ph_events',
  };
  const { runs, P, backfill } = await exportAndBackfill({ type: 'Postgres', config });
  t.equal(backfill.status, 'Completed', JSON.stringify(runs.map((r: any) => r.latest_error)));
  const rows = await dest.sql`select * from analytics.ph_events order by timestamp`;
  t.same(rows.map((r) => r.uuid).sort(), uuids([...inHour(0), ...inHour(1)]));
  const alice = rows.find((r) => r.distinct_id === 'alice')!;
  t.ok(alice.timestamp instanceof Date, 'timestamp is a timestamptz column');
  t.same(alice.person_properties, { email: 'alice@example.com' }, 'JSON columns keep their structure');
  t.equal(alice.team_id, a.project.id);
  t.same(
    runs.map((r: any) => r.records_completed),
    [40, 25],
  );

  const retried = await call('projects_batch_exports_runs_retry_create', {
    key: a.key,
    params: { ...P, id: runs[1].id },
  });
  await waitFor('the retry', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: retried.body.backfill_id },
    });
    return b.body.status === 'Completed';
  });
  const [count] = await dest.sql`select count(*)::int as n from analytics.ph_events`;
  t.equal(count!.n, 65, 'exporting an interval again adds no duplicate');

  const persons = await exportAndBackfill(
    { type: 'Postgres', config: { ...config, table_name: 'ph_persons' } },
    { model: 'persons' },
    5,
  );
  t.equal(persons.backfill.status, 'Completed');
  const people = await dest.sql`select * from analytics.ph_persons`;
  t.same(
    people.map((p) => [p.distinct_id, p.person_id, p.properties]),
    [['alice', person.uuid, { email: 'alice@example.com' }]],
  );

  const refused = await exportAndBackfill(
    { type: 'Postgres', config: { ...config, database: 'no_such_database_here' } },
    {},
    1,
  );
  t.equal(refused.backfill.status, 'Failed');
  t.match(
    refused.runs[0],
    { status: 'Failed', latest_error: /no_such_database_here/ },
    'a configuration error fails at once',
  );
});

t.test('HTTP: batches in PostHog capture format, retried on 5xx, failed on 4xx', async (t) => {
  const target = await captureServer(t, (_req, n) => (n === 1 ? 503 : 200));
  const { runs, backfill, exp } = await exportAndBackfill({
    type: 'HTTP',
    config: { url: target.url, token: 'phc_target' },
  });
  t.equal(backfill.status, 'Completed');
  t.ok(
    target.requests.every(
      (r) => r.body.api_key === 'phc_target' && r.body.historical_migration === true && r.path === '/batch/',
    ),
  );
  const events = target.requests.flatMap((r) => r.body.batch);
  t.same(
    [...new Set(events.map((e: any) => e.uuid))].sort(),
    uuids([...inHour(0), ...inHour(1)]),
    'every event arrived',
  );
  const withChain = events.find((e: any) => e.distinct_id === 'alice');
  t.same(Object.keys(withChain), ['uuid', 'event', 'distinct_id', 'properties', 'timestamp']);
  t.equal(withChain.properties.$elements_chain, 'a:href="/x"');
  t.ok(runs.every((r: any) => r.status === 'Completed'));
  const logs = await call('projects_batch_exports_logs_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: exp.id },
    query: { level: 'WARNING' },
  });
  t.match(logs.body.results, [{ message: /will retry: The HTTP destination answered 503/ }], 'the 503 was retried');

  const refusing = await captureServer(t, () => 401);
  const refused = await exportAndBackfill({ type: 'HTTP', config: { url: refusing.url, token: 'wrong' } }, {}, 1);
  t.match(refused.runs[0], { status: 'Failed', latest_error: 'The HTTP destination refused the batch: 401' });
  t.equal(refused.backfill.status, 'Failed');
});
