// `make bench-10m`: the 10,000,000-event data set of issue #32, generated on disk in a database of its
// own on DATABASE_URL (never in CI): its size, and the latency of a Trends daily count over 30 days,
// HogQL count by event and the events listing with a property filter, each beside the same SQL by hand
// run on the same database. BENCH_10M_EVENTS changes the size; BENCH_10M_EXPORT=1 adds the export
// throughput of bench/export.ts at the same size. Writes bench/results-10m.md (BENCH_OUT elsewhere).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import postgres from 'postgres';
import { queryRoleName } from '../src/query/role-queries.js';

const EVENTS = Number(process.env.BENCH_10M_EVENTS ?? 10_000_000);
const PERSONS = 10_000;
const DAYS = 30;
const RUNS = Number(process.env.BENCH_10M_RUNS ?? 5);
const OUT = process.env.BENCH_OUT ?? 'bench/results-10m.md';
const base = process.env.DATABASE_URL;
if (!base) throw new Error('the 10M benchmark needs DATABASE_URL');
const KEY = `phx_bench10m${randomBytes(12).toString('hex')}`;
const dbName = `bench_10m_${Date.now()}`;
const url = Object.assign(new URL(base), { pathname: `/${dbName}` }).toString();
const admin = postgres(base, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${dbName}`);
const port = 19000 + Math.floor(Math.random() * 1000);
const api = `http://127.0.0.1:${port}`;
const lines: string[] = [];
const note = (line: string) => {
  process.stdout.write(`${line}\n`);
  lines.push(line);
};

const server: ChildProcess = spawn(process.execPath, ['--heap-growing-percent=50', 'dist/app/server.mjs'], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: url,
    BOOTSTRAP_API_KEY: KEY,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'warn',
    WORKER: '0',
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  },
  stdio: 'inherit',
});
const sql = postgres(url, { max: 2, onnotice: () => {} });

async function call(path: string, body?: unknown): Promise<{ ms: number; json: unknown }> {
  const started = performance.now();
  const res = await fetch(api + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
  return { ms: performance.now() - started, json: JSON.parse(text) };
}

/** p50 and max of `RUNS` timed runs after one untimed run. */
async function timed(run: () => Promise<unknown>): Promise<{ p50: number; max: number }> {
  await run();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { p50: Math.round(ms[Math.floor((ms.length - 1) / 2)]!), max: Math.round(ms.at(-1)!) };
}

const gb = (bytes: number) => (bytes / 1024 ** 3).toFixed(2);

try {
  for (let i = 0; ; i++) {
    if (
      await fetch(`${api}/_health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 600 || server.exitCode !== null) throw new Error('the server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const me = (await call('/api/users/@me/')).json as { team: { id: number } };
  const project = me.team.id;

  const seedStart = performance.now();
  // 10,000 persons, each with one distinct id; events spread evenly over the last 30 days.
  await sql`insert into persons (project_id, properties, created_at)
    select ${project}, jsonb_build_object('email', 'user' || i || '@example.com'), now() - interval '31 days'
    from generate_series(1, ${PERSONS}) as i`;
  await sql`insert into person_distinct_ids (project_id, distinct_id, person_id)
    select ${project}, 'user-' || (row_number() over (order by id) - 1), id from persons where project_id = ${project}`;
  const [{ first } = { first: 0 }] = await sql<
    { first: number }[]
  >`select min(id)::int as first from persons where project_id = ${project}`;
  const step = (DAYS * 86_400) / EVENTS;
  const chunk = 1_000_000;
  for (let from = 1; from <= EVENTS; from += chunk) {
    const to = Math.min(EVENTS, from + chunk - 1);
    await sql`
      insert into events (uuid, project_id, event, distinct_id, properties, timestamp, person_id)
      select gen_random_uuid(), ${project},
             (array['$pageview', '$pageview', '$autocapture', 'signup', 'purchase'])[1 + i % 5],
             'user-' || (i % ${PERSONS}::int),
             jsonb_build_object('$browser', (array['Chrome', 'Firefox', 'Safari'])[1 + i % 3],
               'plan', (array['free', 'pro'])[1 + i % 2], 'n', i),
             now() - make_interval(secs => i * ${step}::float8),
             ${first}::int + i % ${PERSONS}::int
      from generate_series(${from}::int, ${to}::int) as i`;
    process.stdout.write(`seeded ${to.toLocaleString('en')} events\n`);
  }
  // Ingestion keeps each stored uuid in event_uuids, which dedup reads.
  await sql`insert into event_uuids (project_id, uuid, timestamp) select project_id, uuid, timestamp from events`;
  await sql`vacuum analyze`;
  const seedS = (performance.now() - seedStart) / 1000;
  const [size] = await sql`
    select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as events,
           pg_total_relation_size('event_uuids')::bigint as uuids,
           pg_database_size(current_database())::bigint as db
    from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'events'::regclass`;

  const trends = {
    refresh: 'force_blocking',
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: '$pageview' }],
      dateRange: { date_from: '-30d' },
      interval: 'day',
    },
  };
  const countByEvent = {
    refresh: 'force_blocking',
    query: { kind: 'HogQLQuery', query: 'select event, count() from events group by event' },
  };
  const filtered = `/api/projects/${project}/events/?properties=${encodeURIComponent(
    JSON.stringify([{ key: '$browser', value: 'Firefox', operator: 'exact', type: 'event' }]),
  )}`;
  const rows: [string, { p50: number; max: number }, { p50: number; max: number }, string][] = [];
  const q = `/api/projects/${project}/query/`;
  rows.push([
    `Trends daily count of one event, ${DAYS} days`,
    await timed(() => call(q, trends)),
    await timed(
      () => sql`select date_trunc('day', timestamp at time zone 'UTC') as day, count(*) from events
        where project_id = ${project} and event = '$pageview'
          and timestamp >= date_trunc('day', now() at time zone 'UTC' - interval '30 days') at time zone 'UTC'
        group by 1 order by 1`,
    ),
    '≤ 1,000 ms',
  ]);
  rows.push([
    'HogQL count by event',
    await timed(() => call(q, countByEvent)),
    await timed(() => sql`select event, count(*) from events where project_id = ${project} group by event limit 101`),
    '≤ 100 ms (at 1M)',
  ]);
  rows.push([
    'events listing, property filter (first page)',
    await timed(() => call(filtered)),
    await timed(
      () => sql`select * from events where project_id = ${project} and properties ->> '$browser' = 'Firefox'
        order by timestamp desc, id desc limit 101`,
    ),
    '',
  ]);

  note(`# ${EVENTS.toLocaleString('en')} events on PostgreSQL`);
  note('');
  note(
    `${new Date().toISOString()} on ${cpus().length} cores (${cpus()[0]?.model.trim()}), Node ${process.version}, ` +
      `load average at the end ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' / ')}. ${process.env.BENCH_NOTE ?? ''}`,
  );
  note('');
  note(
    `${EVENTS.toLocaleString('en')} events of one project over ${DAYS} days, ${PERSONS.toLocaleString('en')} ` +
      `persons, seeded by SQL in ${seedS.toFixed(0)} s. Events (partitions and their indexes) ` +
      `${gb(Number(size!.events))} GB, event_uuids ${gb(Number(size!.uuids))} GB, ` +
      `database ${gb(Number(size!.db))} GB. ` +
      `Each figure: ${RUNS} runs after one untimed run, one at a time; the API answers with \`force_blocking\` ` +
      '(no cache); "by hand" is the same question as one SQL statement sent by postgres.js.',
  );
  note('');
  note('| request | API p50 ms | API max ms | by hand p50 ms | by hand max ms | API / by hand | target |');
  note('| ------- | ---------: | ---------: | -------------: | -------------: | ------------: | ------ |');
  for (const [name, ours, hand, target] of rows) {
    const ratio = `${((ours.p50 / Math.max(1, hand.p50)) * 100).toFixed(0)}%`;
    note(`| ${name} | ${ours.p50} | ${ours.max} | ${hand.p50} | ${hand.max} | ${ratio} | ${target} |`);
  }
} finally {
  await sql.end();
  const exited = new Promise((r) => server.once('exit', r));
  if (server.exitCode === null) server.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
  // BENCH_10M_KEEP=1 keeps the data set for reading plans (the database's name is printed).
  if (process.env.BENCH_10M_KEEP === '1') console.log(`kept database ${dbName}`);
  else {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.unsafe(`drop role if exists ${queryRoleName(dbName)}`);
  }
  await admin.end();
}

if (process.env.BENCH_10M_EXPORT === '1') {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/export.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_EXPORT_EVENTS: String(EVENTS) },
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  await new Promise((r) => child.once('exit', r));
  const exportLines = out.split('\n').filter((l) => l.startsWith('|'));
  note('');
  note(`## Batch export of ${EVENTS.toLocaleString('en')} events (bench/export.ts)`);
  note('');
  note('| backend | scenario | destination | status | throughput | duration | memory |');
  note('| ------- | -------- | ----------- | ------ | ---------: | -------: | ------ |');
  for (const l of exportLines) note(l);
}
writeFileSync(OUT, `${lines.join('\n')}\n`);
