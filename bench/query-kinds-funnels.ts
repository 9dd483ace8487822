// One run of a 3-step FunnelsQuery and a weekly RetentionQuery over 1,000,000 events (30 days, 10,000
// persons) in a fresh database at DATABASE_URL, through the insight kinds' own executor, against the same
// funnel written by hand in SQL. Not part of CI; writes bench/results-query-kinds-funnels.md.
// Run as: DATABASE_URL=postgres://... npx tsx bench/query-kinds-funnels.ts
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import postgres from 'postgres';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { prepareQuerySandbox } from '../src/query/role-queries.js';
import { prepareFunnels, runFunnels } from '../src/query/kinds/funnels.js';
import { prepareRetention, runRetention } from '../src/query/kinds/retention.js';
import { queryEngine } from '../src/query/run.js';
import { makeTenant } from '../test/helpers/factories.js';
import { queryRoleName } from '../src/query/role-queries.js';

const base = process.env.DATABASE_URL;
if (!base) throw new Error('DATABASE_URL is required');
const name = `bench_funnels_${Date.now()}`;
const admin = postgres(base, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${name}`);
const url = base.replace(/\/[^/]*$/, `/${name}`);
const database = await openDatabase({ url });
const config = loadConfig({ ...process.env, DATABASE_URL: url });
const sandbox = await prepareQuerySandbox(database.db, { tempFileLimitMb: 1024, workMemMb: 64 });
const engine = queryEngine(database.db, config, sandbox.limits);
const tenant = await makeTenant(database.db);
const project = tenant.project.id;
const sql = postgres(url, { max: 1, onnotice: () => {} });

const PERSONS = 10_000;
const EVENTS = 1_000_000;
console.log('seeding');
await sql`insert into persons (project_id, created_at)
  select ${project}, '2024-06-01T00:00:00Z'::timestamptz from generate_series(1, ${PERSONS})`;
const [seed] = await sql`select min(id) as first from persons where project_id = ${project}`;
const first = Number(seed!.first);
// Each event: a person, one of five names ($pageview twice as likely), a time in the 30 days of June.
await sql`insert into events (uuid, project_id, event, distinct_id, person_id, properties, timestamp)
  select gen_random_uuid(), ${project},
    (array['$pageview', '$pageview', 'signup', 'purchase', 'other'])[1 + (i / ${PERSONS} + i / 7) % 5],
    'user-' || (i % ${PERSONS}), ${first} + (i % ${PERSONS}),
    jsonb_build_object('$browser', (array['Chrome', 'Firefox', 'Safari'])[1 + i % 3]),
    '2024-06-01T00:00:00Z'::timestamptz + make_interval(secs => (i * 2.592)::float8)
  from generate_series(0, ${EVENTS - 1}) as i`;
// Ingestion keeps each stored uuid in event_uuids, which dedup reads.
await sql`insert into event_uuids (project_id, uuid, timestamp)
  select project_id, uuid, timestamp from events where project_id = ${project}`;
// The partition of the data's month, as the server's hourly job would make it.
await sql`select events_ensure_partitions(now(), null)`;
await sql`analyze`;

const ex = { engine, organizationId: tenant.organization.id };
const dateRange = { date_from: '2024-06-01', date_to: '2024-06-30' };
const funnelQuery = {
  kind: 'FunnelsQuery',
  dateRange,
  series: ['$pageview', 'signup', 'purchase'].map((event) => ({ kind: 'EventsNode', event })),
};
const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const out = await f();
  return [out, performance.now() - t0];
};
console.log('funnel');
const [funnel, funnelMs] = await timed(() => runFunnels(ex, project, prepareFunnels(funnelQuery)));
// The same funnel as a person would write it for this one case: per person the greedy path from each
// $pageview (the next signup at or after it, the next purchase at or after that), 14 days, best path counted.
console.log('hand-written');
const [hand, handMs] = await timed(
  () => sql`with e as (select person_id as p, timestamp as ts, event from events
      where project_id = ${project} and timestamp >= '2024-06-01T00:00:00Z' and timestamp <=
        '2024-06-30T23:59:59.999999Z'
        and event in ('$pageview', 'signup', 'purchase')),
    w as (select p, ts, event,
        min(ts) filter (where event = 'signup') over (partition by p order by ts desc range between
          unbounded preceding and current row) as n1,
        min(ts) filter (where event = 'purchase') over (partition by p order by ts desc range
          between unbounded preceding and current row) as n2
      from e),
    at as (select p, ts, min(n2) as n2 from w group by p, ts),
    paths as (select w.p, case when w.n1 <= w.ts + interval '14 days'
        then 2 + coalesce((at.n2 <= w.ts + interval '14 days')::int, 0) else 1 end as steps
      from w left join at on at.p = w.p and at.ts = w.n1 where w.event = '$pageview'),
    best as (select p, max(steps) as steps from paths group by p)
    select count(*) filter (where steps >= 1) as c0, count(*) filter (where steps >= 2) as c1,
      count(*) filter (where steps >= 3) as c2 from best`,
);
console.log('retention');
const retentionQuery = {
  kind: 'RetentionQuery',
  dateRange: { date_to: '2024-06-30' },
  retentionFilter: { period: 'Week', totalIntervals: 8, retentionType: 'retention_recurring' },
};
const [retention, retentionMs] = await timed(() => runRetention(ex, project, prepareRetention(retentionQuery)));

const counts = (funnel.results as { count: number }[]).map((s) => s.count);
const handCounts = [hand[0]!.c0, hand[0]!.c1, hand[0]!.c2].map(Number);
const same = JSON.stringify(counts) === JSON.stringify(handCounts);
const [pgVersion] = await sql`select current_setting('server_version') as v`;
const ratio = funnelMs / handMs;
const sizes = retention.results.map((r) => r.values[0]!.count);
const rows = [
  [
    'FunnelsQuery `$pageview` → `signup` → `purchase`, ordered, 14-day window, 30 days',
    funnelMs.toFixed(0),
    JSON.stringify(counts),
  ],
  [
    'the same funnel in hand-written SQL (one query, no generality)',
    handMs.toFixed(0),
    `${JSON.stringify(handCounts)} (${same ? 'same counts' : 'DIFFERENT counts'})`,
  ],
  ['RetentionQuery, recurring, weekly, 8 cohorts', retentionMs.toFixed(0), `cohort sizes ${JSON.stringify(sizes)}`],
];
const out = `# FunnelsQuery and RetentionQuery on 1,000,000 events

${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model}), Node ${process.version}, PostgreSQL
${pgVersion!.v} at DATABASE_URL. **One run of each, on a machine shared with other work** (other engineers' tests
were running): read these as orders of magnitude, not as a stable figure. Script: \`bench/query-kinds-funnels.ts\`.

Data: ${EVENTS.toLocaleString('en')} events over the 30 days of June 2024, ${PERSONS.toLocaleString('en')} persons,
five event names (\`$pageview\` two in five), freshly inserted and analyzed, no cache.

| query | ms | answer |
| --- | ---: | --- |
${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}

FunnelsQuery / hand-written SQL: ${(ratio * 100).toFixed(0)}% (${ratio <= 1.1 ? 'within' : 'not within'} 10%).
The API's funnel also computes the conversion times (mean and median per step) and the exact path choice
(latest start among the earliest completions), which the hand-written query leaves out; it includes the date
range's own query (the project's timezone).
`;
writeFileSync('bench/results-query-kinds-funnels.md', out);
console.log(out);
await sql.end();
await database.close();
await admin.unsafe(`drop database ${name} with (force)`);
await admin.unsafe(`drop role if exists ${queryRoleName(name)}`);
await admin.end();
