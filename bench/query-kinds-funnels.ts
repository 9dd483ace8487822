// A 3-step FunnelsQuery and a weekly RetentionQuery over 1,000,000 events (30 days, 10,000
// persons) in a fresh database at DATABASE_URL, through the insight kinds' own executor, against the same
// funnel written by hand in SQL. Not part of CI; writes bench/results-query-kinds-funnels.md.
// Run as: make bench-funnels (part of make bench).
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
// BENCH_FUNNELS_DB names a database an earlier run kept (BENCH_FUNNELS_KEEP=1): it is measured again, unseeded.
const reuse = process.env.BENCH_FUNNELS_DB;
const name = reuse ?? `bench_funnels_${Date.now()}`;
const admin = postgres(base, { max: 1, onnotice: () => {} });
if (!reuse) await admin.unsafe(`create database ${name}`);
const url = base.replace(/\/[^/]*$/, `/${name}`);
const database = await openDatabase({ url });
const config = loadConfig({ ...process.env, DATABASE_URL: url });
const sandbox = await prepareQuerySandbox(database.db, { tempFileLimitMb: 1024, workMemMb: 64 });
const engine = queryEngine(database.db, config, sandbox.limits);
const sql = postgres(url, { max: 1, onnotice: () => {} });
const [kept] = reuse ? await sql`select id, organization_id from projects order by id limit 1` : [];
const tenant = kept
  ? { project: { id: Number(kept.id) }, organization: { id: String(kept.organization_id) } }
  : await makeTenant(database.db);
const project = tenant.project.id;

const PERSONS = 10_000;
const EVENTS = 1_000_000;
if (!reuse) await seed();
async function seed() {
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
}

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
// Both hand-written queries: the funnel's events per person, each with the next signup and the next purchase at
// or after it (`w`), and each time's next purchase (`at`).
const nextSteps = () => sql`e as (select person_id as p, timestamp as ts, event from events
      where project_id = ${project} and timestamp >= '2024-06-01T00:00:00Z' and timestamp <=
        '2024-06-30T23:59:59.999999Z'
        and event in ('$pageview', 'signup', 'purchase')),
    w as (select p, ts, event,
        min(ts) filter (where event = 'signup') over (partition by p order by ts desc range between
          unbounded preceding and current row) as n1,
        min(ts) filter (where event = 'purchase') over (partition by p order by ts desc range
          between unbounded preceding and current row) as n2
      from e),
    at as (select p, ts, min(n2) as n2 from w group by p, ts)`;
// The same funnel as a person would write it for this one case: per person the greedy path from each
// $pageview (the next signup at or after it, the next purchase at or after that), 14 days, best path counted.
const handCountsOnly = () => sql`with ${nextSteps()},
    paths as (select w.p, case when w.n1 <= w.ts + interval '14 days'
        then 2 + coalesce((at.n2 <= w.ts + interval '14 days')::int, 0) else 1 end as steps
      from w left join at on at.p = w.p and at.ts = w.n1 where w.event = '$pageview'),
    best as (select p, max(steps) as steps from paths group by p)
    select count(*) filter (where steps >= 1) as c0, count(*) filter (where steps >= 2) as c1,
      count(*) filter (where steps >= 3) as c2 from best`;
// The same answer as the API's, written by hand for this one case: the path PostHog's funnel picks per
// person (furthest, then quickest, then latest), with the mean and median seconds from each step to the next.
const secs = (a: string, b: string) => sql.unsafe(`extract(epoch from (${b} - ${a}))::float8`);
const handSameAnswer = () => sql`with ${nextSteps()},
    paths as (select w.p, w.ts as t0, case when w.n1 <= w.ts + interval '14 days' then w.n1 end as t1,
        case when w.n1 <= w.ts + interval '14 days' and at.n2 <= w.ts + interval '14 days' then at.n2 end as t2
      from w left join at on at.p = w.p and at.ts = w.n1 where w.event = '$pageview'),
    best as (select distinct on (p) p, t0, t1, t2, 1 + (t1 is not null)::int + (t2 is not null)::int as steps
      from paths order by p, steps desc, coalesce(t2, t1, t0) asc, t0 desc)
    select count(*) as c0, count(*) filter (where steps >= 2) as c1, count(*) filter (where steps >= 3) as c2,
      avg(${secs('t0', 't1')}) filter (where t1 > t0) as avg1,
      percentile_cont(0.5) within group (order by ${secs('t0', 't1')}) filter (where t1 > t0) as med1,
      avg(${secs('t1', 't2')}) filter (where t2 > t1) as avg2,
      percentile_cont(0.5) within group (order by ${secs('t1', 't2')}) filter (where t2 > t1) as med2
    from best`;

// Rounds in turns (API, counts only, same answer), so that the machine's load falls on each alike.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const apiMs: number[] = [];
const countsMs: number[] = [];
const sameMs: number[] = [];
let funnel!: Awaited<ReturnType<typeof runFunnels>>;
let hand!: Awaited<ReturnType<typeof handCountsOnly>>;
let handSame!: Awaited<ReturnType<typeof handSameAnswer>>;
// A first, unmeasured round: the parser's start and the funnel text's one parse, and the data into the caches.
console.log('first round');
const [, firstMs] = await timed(() => runFunnels(ex, project, prepareFunnels(funnelQuery)));
await handCountsOnly();
await handSameAnswer();
for (let r = 0; r < ROUNDS; r++) {
  console.log(`round ${r + 1}`);
  let ms: number;
  [funnel, ms] = await timed(() => runFunnels(ex, project, prepareFunnels(funnelQuery)));
  apiMs.push(ms);
  [hand, ms] = await timed(handCountsOnly);
  countsMs.push(ms);
  [handSame, ms] = await timed(handSameAnswer);
  sameMs.push(ms);
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const funnelMs = median(apiMs);
const handMs = median(countsMs);
const sameMs50 = median(sameMs);
console.log('retention');
const retentionQuery = {
  kind: 'RetentionQuery',
  dateRange: { date_to: '2024-06-30' },
  retentionFilter: { period: 'Week', totalIntervals: 8, retentionType: 'retention_recurring' },
};
const [retention, retentionMs] = await timed(() => runRetention(ex, project, prepareRetention(retentionQuery)));

type FunnelStep = { count: number; average_conversion_time: number | null; median_conversion_time: number | null };
const steps = funnel.results as FunnelStep[];
const counts = steps.map((s) => s.count);
const handCounts = [hand[0]!.c0, hand[0]!.c1, hand[0]!.c2].map(Number);
const same = JSON.stringify(counts) === JSON.stringify(handCounts);
// The API's answer and the same-answer query's, rounded alike.
const r2 = (v: unknown) => (v === null ? null : Math.round(Number(v) * 100) / 100);
const apiAnswer = steps.flatMap((s) => [s.count, r2(s.average_conversion_time), r2(s.median_conversion_time)]);
const h = handSame[0]!;
const handAnswer = [h.c0, null, null, h.c1, h.avg1, h.med1, h.c2, h.avg2, h.med2].map((v, i) =>
  i % 3 === 0 ? Number(v) : r2(v),
);
const sameAnswer = JSON.stringify(apiAnswer) === JSON.stringify(handAnswer);
const sameRatio = funnelMs / sameMs50;
const [pgVersion] = await sql`select current_setting('server_version') as v`;
const ratio = funnelMs / handMs;
const verdict = (r: number) => `${(r * 100).toFixed(0)}% (${r <= 1.1 ? 'within' : 'not within'} 10%)`;
const spread = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
const sizes = retention.results.map((r) => r.values[0]!.count);
const rows = [
  [
    'FunnelsQuery `$pageview` → `signup` → `purchase`, ordered, 14-day window, 30 days',
    `${funnelMs.toFixed(0)} (${spread(apiMs)})`,
    JSON.stringify(apiAnswer),
  ],
  [
    'the same funnel in hand-written SQL, counts only (one query, no generality)',
    `${handMs.toFixed(0)} (${spread(countsMs)})`,
    `${JSON.stringify(handCounts)} (${same ? 'same counts' : 'DIFFERENT counts'})`,
  ],
  [
    'the same funnel in hand-written SQL, the same answer (counts, mean and median times, path choice)',
    `${sameMs50.toFixed(0)} (${spread(sameMs)})`,
    `${JSON.stringify(handAnswer)} (${sameAnswer ? 'same answer' : 'DIFFERENT answer'})`,
  ],
  ['RetentionQuery, recurring, weekly, 8 cohorts', retentionMs.toFixed(0), `cohort sizes ${JSON.stringify(sizes)}`],
];
const out = `# FunnelsQuery and RetentionQuery on 1,000,000 events

${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model}), Node ${process.version}, PostgreSQL
${pgVersion!.v} at DATABASE_URL, on a machine shared with other work: read the ratios of one run, measured in
turns, rather than the absolute figures. Script: \`bench/query-kinds-funnels.ts\`.

Data: ${EVENTS.toLocaleString('en')} events over the 30 days of June 2024, ${PERSONS.toLocaleString('en')} persons,
five event names (\`$pageview\` two in five), freshly inserted and analyzed, no cache.

| query | ms | answer |
| --- | ---: | --- |
${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}

Medians of ${ROUNDS} rounds (each round: the API, then the two hand-written queries; every round's figure in
brackets), after a first round of each that is not counted: the API's took ${firstMs.toFixed(0)} ms, its HogQL
parser starting and parsing the funnel's text (once per process and shape of query: the text is kept). The
funnel's answer: per step its count, mean and median seconds from the step before.

- FunnelsQuery / hand-written SQL of the same answer: ${verdict(sameRatio)}.
- FunnelsQuery / hand-written SQL of the counts only: ${verdict(ratio)}.

The FunnelsQuery is written as HogQL and compiled through the one compiler, as every kind; its time includes
resolving the date range (the project's timezone) and compiling. The hand-written queries read
\`events.person_id\` directly; the API's HogQL reads \`person_id\`, the
person's uuid, through a join of persons. It looks up the next steps only at the rows of steps a path can
continue from, which the hand-written queries do for every row. The RetentionQuery is one run, for scale.
`;
writeFileSync('bench/results-query-kinds-funnels.md', out);
console.log(out);
await sql.end();
await database.close();
if (!process.env.BENCH_FUNNELS_KEEP) {
  await admin.unsafe(`drop database ${name} with (force)`);
  await admin.unsafe(`drop role if exists ${queryRoleName(name)}`);
} else console.log(`kept database ${name}`);
await admin.end();
