// `make bench` part two: batch export throughput. Exports 1,000,000 events (one day interval) to a
// PostgreSQL database and to an S3-compatible server (s3rver), timing the run and sampling this
// process's peak RSS. Needs DATABASE_URL; prints one line per destination for bench/results.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import S3rver from 's3rver';
import { buildApp } from '../src/app.js';
import { executeRun } from '../src/batch-exports/runner.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { tenantNetwork } from '../src/net/index.js';
import { createOrganization } from '../src/organizations/queries.js';
import { createKey } from '../src/personal-api-keys/queries.js';
import { insertRuns } from '../src/batch-exports/run-queries.js';
import { secretBox } from '../src/secrets/index.js';
import { createUser } from '../src/users/queries.js';
import { queryRoleName } from '../src/query/role-queries.js';

const EVENTS = Number(process.env.BENCH_EXPORT_EVENTS ?? 1_000_000);
const base = process.env.DATABASE_URL;
if (!base) throw new Error('the export benchmark needs DATABASE_URL');
const withDb = (name: string) => Object.assign(new URL(base), { pathname: `/${name}` }).toString();
const admin = postgres(base, { max: 1, onnotice: () => {} });
const source = `bench_export_${Date.now()}`;
const target = `${source}_dest`;
await admin.unsafe(`create database ${source}`);
await admin.unsafe(`create database ${target}`);
const s3dir = mkdtempSync(join(tmpdir(), 'bench-s3-'));
const s3 = new S3rver({
  port: 0,
  address: '127.0.0.1',
  silent: true,
  directory: s3dir,
  configureBuckets: [{ name: 'exports' }],
});
const { port: s3port } = await s3.run();

const database = await openDatabase({ url: withDb(source), poolSize: 5 });
const app = await buildApp({
  config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0', ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8,::1/128' }),
  database,
});
const lines: string[] = [];
try {
  const user = await createUser(database.db, { email: 'bench@example.com' });
  const { project } = await createOrganization(database.db, { name: 'Bench' }, user.id);
  const { value: key } = await createKey(database.db, user.id, { label: 'bench', scopes: ['*'] });
  const day = new Date(Date.UTC(2024, 0, 1));
  const sql = postgres(withDb(source), { max: 1, onnotice: () => {} });
  await sql`
    insert into events (uuid, project_id, event, distinct_id, properties, timestamp)
    select gen_random_uuid(), ${project.id}, (array['$pageview', 'signup', 'purchase'])[1 + i % 3],
           'user-' || (i % 50000),
           jsonb_build_object('$browser', (array['Chrome', 'Firefox'])[1 + i % 2],
             '$current_url', 'https://example.com/' || (i % 1000), 'n', i),
           ${day}::timestamptz + make_interval(secs => (i % 86400))
    from generate_series(1, ${EVENTS}) as i`;
  // Ingestion keeps each stored uuid in event_uuids, which dedup reads.
  await sql`insert into event_uuids (project_id, uuid, timestamp)
    select project_id, uuid, timestamp from events where project_id = ${project.id}`;
  // The partition of the data's month, as the server's hourly job would make it.
  await sql`select events_ensure_partitions(now(), null)`;
  await sql`analyze events`;
  await sql.end();
  const t = new URL(withDb(target));
  const destinations = {
    Postgres: {
      host: t.hostname,
      port: Number(t.port || 5432),
      database: target,
      user: decodeURIComponent(t.username) || 'postgres',
      password: decodeURIComponent(t.password) || 'unused',
      schema: 'public',
      table_name: 'events',
    },
    S3: {
      bucket_name: 'exports',
      region: 'us-east-1',
      prefix: 'bench',
      compression: 'gzip',
      endpoint_url: `http://127.0.0.1:${s3port}`,
      aws_access_key_id: 'S3RVER',
      aws_secret_access_key: 'S3RVER',
    },
  };
  for (const [type, config] of Object.entries(destinations)) {
    const res = await app.inject({
      method: 'POST',
      url: `/api/projects/${project.id}/batch_exports/`,
      headers: { authorization: `Bearer ${key}` },
      payload: { name: `bench ${type}`, destination: { type, config }, interval: 'day', paused: true },
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const [run] = await insertRuns(database.db, { project_id: project.id }, res.json().id, [
      { start: day, end: new Date(day.getTime() + 86_400_000) },
    ]);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const started = process.hrtime.bigint();
    const outcome = await executeRun(database.db, {
      runId: run!.id,
      token: `bench-${type}`,
      retryCount: 0,
      retryLimit: 0,
      signal: new AbortController().signal,
      // The batch size a worker would use, from the same setting.
      batchSize: loadConfig({ BATCH_EXPORT_BATCH_SIZE: process.env.BATCH_EXPORT_BATCH_SIZE }).exportBatchSize,
      staleSeconds: 300,
      secrets: secretBox(app.config),
      // The destinations run on this machine.
      network: tenantNetwork(['127.0.0.0/8', '::1/128'], database.url),
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    clearInterval(sampler);
    const memory =
      `peak RSS ${Math.round(peak / 1048576)} MB (+${Math.round((peak - before) / 1048576)} MB during the run; ` +
      'the process also holds the app and s3rver)';
    const line =
      `| postgresql | batch export of ${EVENTS.toLocaleString('en')} events | ${type} | ${outcome} ` +
      `| ${Math.round(EVENTS / seconds)} events/s | ${seconds.toFixed(1)} s | ${memory} |`;
    process.stdout.write(`${line}\n`);
    lines.push(line);
  }
} finally {
  await app.close();
  await database.close();
  await s3.close();
  rmSync(s3dir, { recursive: true, force: true });
  await admin.unsafe(`drop database if exists ${source} with (force)`);
  await admin.unsafe(`drop role if exists ${queryRoleName(source)}`);
  await admin.unsafe(`drop database if exists ${target} with (force)`);
  await admin.unsafe(`drop role if exists ${queryRoleName(target)}`);
  await admin.end();
}
