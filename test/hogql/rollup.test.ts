// The events' hourly counts (drizzle/0035) answer the HogQL queries rollup.ts accepts: every answer here is
// checked against SQL written by hand over the events themselves, after inserts, before and after the deltas
// are folded, after deletes and after retention; the counts are shown to be what answered (a count planted
// in them changes the answer), one project's never reach another's, and what they cannot answer is not read
// from them.
import { sql, type SQL } from 'drizzle-orm';
import { eq } from 'drizzle-orm';
import t, { type Test } from 'tap';
import { projects } from '../../src/db/schema/index.js';
import { foldEventCounts } from '../../src/event-rollups/fold.js';
import { dropBefore } from '../../src/event-partitions/index.js';
import { compileQuery, parseQuery } from '../../src/hogql/index.js';
import { isWholeHourZone } from '../../src/hogql/rollup.js';
import { PgDialect } from 'drizzle-orm/pg-core';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const org = await makeTenant(db);
const other = await makeTenant(db);
const utc = org.project;
const ny = await makeProject(db, org);
await db.update(projects).set({ timezone: 'America/New_York' }).where(eq(projects.id, ny.id));

// March 2024 around New York's change to summer time (2024-03-10 07:00Z), three names, minutes apart.
const at = (iso: string) => new Date(iso);
const rows = (names: string[], from: string, minutes: number, step = 7) =>
  Array.from({ length: minutes / step }, (_, i) => ({
    event: names[i % names.length]!,
    distinct_id: `u${i % 5}`,
    timestamp: new Date(at(from).getTime() + i * step * 60_000),
  }));
for (const p of [utc, ny]) {
  await insertEvents(db, p.id, rows(['pageview', 'pageview', 'signup'], '2024-03-09T20:00:00Z', 24 * 60));
  await insertEvents(db, p.id, rows(['purchase'], '2024-03-10T06:30:00Z', 90, 11));
}
// Another organization: the same names and hours, many more of them.
await insertEvents(db, other.project.id, rows(['pageview', 'signup', 'purchase'], '2024-03-09T20:00:00Z', 24 * 60, 1));

interface Case {
  hogql: string;
  hand: (p: number, zone: string) => SQL;
}
const inRange = (from: string, to: string) =>
  sql`e."timestamp" >= ${from}::timestamptz and e."timestamp" < ${to}::timestamptz`;
const cases: Case[] = [
  {
    hogql: 'select event, count() from events group by event order by event',
    hand: (p) => sql`select e.event, count(*)::int from events e where e.project_id = ${p} group by 1 order by 1`,
  },
  {
    hogql: 'select count() from events',
    hand: (p) => sql`select count(*)::int from events e where e.project_id = ${p}`,
  },
  {
    // Whole hours in both zones: answered from the counts.
    hogql:
      "select toStartOfDay(timestamp) as d, count() from events where event = 'pageview' and " +
      "timestamp >= '2024-03-10 00:00:00' and timestamp < '2024-03-11' group by d order by d",
    hand: (p, z) => sql`select to_char(date_trunc('day', e."timestamp" at time zone ${z}::text), 'YYYY-MM-DD HH24'),
      count(*)::int from events e where e.project_id = ${p} and e.event = 'pageview'
      and ${inRange(`2024-03-10 00:00:00 ${z}`, `2024-03-11 00:00:00 ${z}`)} group by 1 order by 1`,
  },
  {
    // Not whole hours: read from the events.
    hogql:
      "select event, count() from events where timestamp >= '2024-03-10 04:30:00' and " +
      "'2024-03-10 09:15:00' > timestamp group by event order by event",
    hand: (p, z) => sql`select e.event, count(*)::int from events e where e.project_id = ${p}
      and ${inRange(`2024-03-10 04:30:00 ${z}`, `2024-03-10 09:15:00 ${z}`)} group by 1 order by 1`,
  },
  {
    hogql:
      "select toStartOfHour(timestamp) as h, count() as n2 from events where event in ('signup', 'purchase') " +
      'group by h having count() > 1 order by n2 desc, h limit 3',
    hand: (p, z) => sql`select to_char(date_trunc('hour', e."timestamp" at time zone ${z}::text), 'YYYY-MM-DD HH24'),
      count(*)::int as n2 from events e where e.project_id = ${p} and e.event in ('signup', 'purchase')
      group by 1 having count(*) > 1 order by n2 desc, 1 limit 3`,
  },
];

/** Date-times of answers as the hand-written SQL writes them: local, to the hour. */
const plain = (v: unknown) =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v) ? v.slice(0, 13).replace('T', ' ') : v;

async function viaApi(projectId: number, query: string): Promise<unknown[][]> {
  const res = await call('query_create', {
    key: org.key,
    params: { project_id: projectId },
    body: { query: { kind: 'HogQLQuery', query }, refresh: 'force_blocking' } as never,
  });
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
  return (res.body.results as unknown[][]).map((r) => r.map(plain));
}
const byHand = async (q: SQL) => ((await db.execute(q)) as unknown as Record<string, unknown>[]).map(Object.values);

async function allAgree(t: Test, when: string) {
  for (const [project, zone] of [
    [utc, 'UTC'],
    [ny, 'America/New_York'],
  ] as const) {
    for (const c of cases) {
      t.same(await viaApi(project.id, c.hogql), await byHand(c.hand(project.id, zone)), `${when}, ${zone}: ${c.hogql}`);
    }
  }
}

/** Folds until no delta is left (the app's own timer may be folding at the same moment). */
async function foldAll(t: Test) {
  for (let i = 0; i < 100; i++) {
    await foldEventCounts(db);
    const [left] = (await db.execute(sql`select count(*)::int as n from event_count_deltas`)) as unknown as {
      n: number;
    }[];
    if (left?.n === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.fail('the deltas were not folded');
}

const compiled = async (query: string, timezone = 'UTC') => {
  const q = compileQuery(await parseQuery(query), { teamId: utc.id, timezone });
  return new PgDialect().sqlToQuery(q.sql).sql;
};

t.test('answers from the counts equal the events, as they change', async (t) => {
  await allAgree(t, 'inserted, not folded');
  await foldAll(t);
  await allAgree(t, 'folded');
  await db.execute(sql`delete from events where project_id = ${utc.id} and distinct_id in ('u1', 'u3')`);
  await db.execute(sql`delete from events where project_id = ${ny.id} and event = 'purchase'`);
  await allAgree(t, 'deleted, not folded');
  await foldAll(t);
  await allAgree(t, 'deleted, folded');
  const gone = await viaApi(ny.id, "select event, count() from events where event = 'purchase' group by event");
  t.same(gone, [], 'a name whose events are all deleted has no group');
  await dropBefore(db, at('2024-03-10T03:30:00Z'));
  await allAgree(t, 'after retention');
  await foldAll(t);
  await allAgree(t, 'after retention, folded');
});

t.test('the counts answer, and only the project their own', async (t) => {
  const q = 'select count() from events';
  const [[before]] = (await viaApi(utc.id, q)) as [[number]];
  // A count planted in the deltas of this project changes the answer; one in another project's does not.
  await db.execute(sql`insert into event_count_deltas (project_id, event, hour, n)
    values (${utc.id}, 'planted', '2024-03-10T00:00:00Z', 1000),
      (${other.project.id}, 'planted', '2024-03-10T00:00:00Z', 1)`);
  t.same(await viaApi(utc.id, q), [[before + 1000]]);
  t.same(await viaApi(ny.id, "select count() from events where event = 'planted'"), [[0]]);
  // The app's own timer may have folded it meanwhile.
  await db.execute(sql`delete from event_count_deltas where event = 'planted'`);
  await db.execute(sql`delete from event_counts where event = 'planted'`);
  t.same(await viaApi(utc.id, q), [[before]]);
});

t.test('what the counts cannot answer is read from the events', async (t) => {
  const fromCounts = [
    'select event, count() from events group by event',
    "select count() from events where timestamp >= toDateTime('2024-03-10') and event = 'x'",
    'select toStartOfMonth(timestamp) as m, count() from events group by m order by m',
  ];
  for (const q of fromCounts) t.match(await compiled(q), /event_counts/, q);
  const fromEvents = [
    'select uniq(distinct_id) from events',
    "select count() from events where properties.$browser = 'Chrome'",
    'select timestamp, count() from events group by timestamp',
    "select count() from events where timestamp > '2024-03-10'",
    'select count(event) from events',
    'select event, count() from events e join persons p on 1 = 1 group by event',
    'select toStartOfDay(timestamp + interval 1 hour) as d, count() from events group by d',
    'select min(timestamp) from events',
  ];
  for (const q of fromEvents) t.notMatch(await compiled(q), /event_counts/, q);
  // A zone half an hour off UTC: no hour of counts lies in one of its days.
  t.notOk(isWholeHourZone('Asia/Kolkata'));
  t.ok(isWholeHourZone('America/New_York'));
  t.notMatch(await compiled('select event, count() from events group by event', 'Asia/Kolkata'), /event_counts/);
});

t.test('aliases of columns read from the counts', async (t) => {
  for (const q of [
    'select toStartOfMonth(timestamp) as m, count() as n from events group by m order by m',
    "select toStartOfDay(timestamp) as d, count() from events where event = 'signup' group by d having count() > 2",
  ])
    t.match(await compiled(q), /event_counts/, q);
});
