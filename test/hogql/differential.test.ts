// HogQL through the Query API against SQL written by hand: the same questions asked of a small known data set,
// once in HogQL (PostHog's parser and our compiler) and once as PostgreSQL that reads the tables directly. Two
// projects of one organization, in New York and Berlin, each with events on both sides of its DST changes
// (and in the repeated hour of autumn), persons and anonymous events, properties of mixed JSON types and nulls;
// a third project, of another organization, holds rows that would change every answer if they leaked in.
import { eq, sql, type SQL } from 'drizzle-orm';
import t from 'tap';
import { projects } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents, insertPerson, type TestEvent } from '../helpers/event-rows.js';
import { makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const org = await makeTenant(db);
const other = await makeTenant(db);
const ny = org.project;
const berlin = await makeProject(db, org);
await db.update(projects).set({ timezone: 'America/New_York' }).where(eq(projects.id, ny.id));
await db.update(projects).set({ timezone: 'Europe/Berlin' }).where(eq(projects.id, berlin.id));

type Row = [string, string, string, Record<string, unknown>, number | null];
async function seed(projectId: number, rows: Row[]) {
  await insertEvents(
    db,
    projectId,
    rows.map(
      ([at, distinct_id, event, properties, person_id]): Partial<TestEvent> => ({
        timestamp: new Date(at),
        distinct_id,
        event,
        properties,
        person_id,
      }),
    ),
  );
}

// New York springs forward at 2024-03-10 07:00Z (02:00 EST to 03:00 EDT) and falls back at 2024-11-03 06:00Z
// (02:00 EDT to 01:00 EST): 01:00 to 02:00 happens twice that night.
const alice = await insertPerson(db, ny.id, ['alice', 'alice-phone'], { plan: 'pro', age: 31, vip: true });
const bob = await insertPerson(db, ny.id, ['bob'], { plan: 'free', age: '27' });
const carol = await insertPerson(db, ny.id, ['carol'], { plan: null });
await seed(ny.id, [
  ['2024-03-09T23:00:00Z', 'alice', 'pageview', { price: 10, $browser: 'Chrome' }, alice.id],
  ['2024-03-10T04:59:59Z', 'alice-phone', 'pageview', { price: '7.5', $browser: 'Safari' }, alice.id],
  ['2024-03-10T05:00:00Z', 'bob', 'pageview', { price: 'n/a', $browser: 'Chrome' }, bob.id],
  ['2024-03-10T06:59:00Z', 'bob', 'purchase', { price: 20, flag: true }, bob.id],
  ['2024-03-10T07:00:00Z', 'carol', 'pageview', { price: null, flag: 'true' }, carol.id],
  ['2024-03-10T15:00:00Z', 'anon', 'pageview', { $browser: 'Firefox' }, null],
  ['2024-03-11T03:59:59Z', 'alice', 'purchase', { price: 12.5, flag: false }, alice.id],
  ['2024-03-11T04:00:00Z', 'alice', 'pageview', { price: 3 }, alice.id],
  ['2024-11-03T05:30:00Z', 'bob', 'pageview', { price: 1 }, bob.id],
  ['2024-11-03T06:30:00Z', 'bob', 'pageview', { price: 2 }, bob.id],
  ['2024-11-03T06:59:59Z', 'carol', 'purchase', { price: '4', $browser: 'Chrome' }, carol.id],
  ['2024-11-03T07:00:00Z', 'anon', 'pageview', {}, null],
]);
// Berlin springs forward at 2024-03-31 01:00Z (02:00 CET to 03:00 CEST) and falls back at 2024-10-27 01:00Z.
const dave = await insertPerson(db, berlin.id, ['dave'], { plan: 'pro', age: 45 });
const erin = await insertPerson(db, berlin.id, ['erin'], {});
await seed(berlin.id, [
  ['2024-03-30T23:30:00Z', 'dave', 'pageview', { price: 5, $browser: 'Chrome' }, dave.id],
  ['2024-03-31T00:59:59Z', 'dave', 'purchase', { price: '15' }, dave.id],
  ['2024-03-31T01:00:00Z', 'erin', 'pageview', { price: 'x', flag: true }, erin.id],
  ['2024-03-31T22:00:00Z', 'erin', 'pageview', {}, erin.id],
  ['2024-10-27T00:30:00Z', 'dave', 'pageview', { price: 2, $browser: 'Firefox' }, dave.id],
  ['2024-10-27T01:30:00Z', 'dave', 'pageview', { price: 3 }, dave.id],
]);
// Another organization's project: the same distinct ids, dates and property names.
const intruder = await insertPerson(db, other.project.id, ['alice', 'anon', 'dave'], { plan: 'pro', age: 99 });
await seed(other.project.id, [
  ['2024-03-10T05:00:00Z', 'alice', 'purchase', { price: 999, flag: true, $browser: 'Chrome' }, intruder.id],
  ['2024-03-31T00:30:00Z', 'dave', 'pageview', { price: 999 }, intruder.id],
  ['2024-11-03T05:30:00Z', 'anon', 'purchase', { price: 999 }, null],
]);

/** A date-time as its wall clock in `zone` and its instant: `2024-03-10T03:00:00@1710054000`. */
const moment = (x: SQL, zone: string) =>
  sql`to_char(${x} at time zone ${zone}::text, 'YYYY-MM-DD"T"HH24:MI:SS') || '@' || extract(epoch from ${x})::bigint`;
/** A property as a number where its text is one (the only ones HogQL reads as numbers), else null. */
const num = (x: SQL) => sql`(case when ${x} ~ '^-?[0-9]+(\\.[0-9]+)?$' then (${x})::numeric end)`;

/** The Query API's date-times in the same form as `moment`. */
function normalized(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d{6}([+-]\d{2}:\d{2}|Z)$/.exec(value);
  return m ? `${m[1]}@${Date.parse(value) / 1000}` : value;
}

interface Case {
  what: string;
  hogql: string;
  /** The same question for project `p` (its timezone `z`), in SQL over the tables themselves. */
  hand: (p: number, z: string) => SQL;
}

const cases: Case[] = [
  {
    what: 'group by, count distinct',
    hogql:
      'select event, count(), count(distinct distinct_id), uniq(person_id) from events group by event order by event',
    hand: (p) => sql`select e.event as a, count(*)::int as b, count(distinct e.distinct_id)::int as c,
      count(distinct coalesce(pe.uuid::text, e.distinct_id))::int as d
      from events e left join persons pe on pe.id = e.person_id
      where e.project_id = ${p} group by e.event order by e.event`,
  },
  {
    // uniq(person_id) is counted by the event's person key without joining persons; uniq(toString(person_id))
    // reads the person's uuid through the join: both must count the same people.
    what: 'distinct persons, counted by key and through the persons join',
    hogql: 'select event, uniq(person_id), uniq(toString(person_id)) from events group by event order by event',
    hand: (p) => sql`select e.event as a, count(distinct coalesce(pe.uuid::text, e.distinct_id))::int as b,
      count(distinct coalesce(pe.uuid::text, e.distinct_id))::int as c
      from events e left join persons pe on pe.id = e.person_id
      where e.project_id = ${p} group by e.event order by e.event`,
  },
  {
    what: 'quantiles and the median of a property of mixed types',
    hogql:
      'select event, quantile(0.9)(toFloat(properties.price)), median(properties.price) from events ' +
      'group by event order by event',
    hand: (p) => sql`select e.event as a,
      percentile_cont(0.9) within group (order by ${num(sql`e.properties->>'price'`)}) as b,
      percentile_cont(0.5) within group (order by ${num(sql`e.properties->>'price'`)}) as c
      from events e where e.project_id = ${p} group by e.event order by e.event`,
  },
  {
    what: 'a property of mixed types compared with a number',
    hogql: 'select distinct_id, properties.price from events where properties.price > 5 order by timestamp',
    hand: (p) => sql`select e.distinct_id as a, e.properties->>'price' as b from events e
      where e.project_id = ${p} and ${num(sql`e.properties->>'price'`)} > 5 order by e.timestamp`,
  },
  {
    what: 'booleans, nulls and missing properties',
    hogql:
      'select countIf(properties.flag = true), countIf(properties.price is null), ' +
      'countIf(person.properties.plan is null), count() from events',
    hand: (p) => sql`select count(*) filter (where e.properties->>'flag' = 'true')::int as a,
      count(*) filter (where e.properties->>'price' is null)::int as b,
      count(*) filter (where pe.properties->>'plan' is null)::int as c, count(*)::int as d
      from events e left join persons pe on pe.id = e.person_id where e.project_id = ${p}`,
  },
  {
    what: "days in the project's timezone",
    hogql: 'select toDate(timestamp) as d, count() from events group by d order by d',
    hand: (p, z) => sql`select to_char((e.timestamp at time zone ${z}::text)::date, 'YYYY-MM-DD') as a,
      count(*)::int as b from events e where e.project_id = ${p} group by 1 order by 1`,
  },
  {
    what: "hours in the project's timezone, the repeated hour twice",
    hogql: 'select toStartOfHour(timestamp) as h, count() from events group by h order by h',
    // Both zones are whole hours from UTC, so a local hour begins where a UTC hour does.
    hand: (p, z) => sql`select ${moment(sql`date_trunc('hour', e.timestamp)`, z)} as a, count(*)::int as b
      from events e where e.project_id = ${p} group by date_trunc('hour', e.timestamp) order by 1`,
  },
  {
    what: "months in the project's timezone",
    hogql: 'select toStartOfMonth(timestamp) as m, count() from events group by m order by m',
    hand: (p, z) => sql`select to_char(date_trunc('month', e.timestamp at time zone ${z}::text), 'YYYY-MM-DD') as a,
      count(*)::int as b from events e where e.project_id = ${p} group by 1 order by 1`,
  },
  {
    what: 'a join to persons',
    hogql:
      'select p.properties.plan as plan, count() from events e join persons p on p.id = e.person_id ' +
      'group by plan order by plan',
    hand: (p) => sql`select pe.properties->>'plan' as a, count(*)::int as b
      from events e join persons pe on pe.id = e.person_id
      where e.project_id = ${p} and pe.project_id = ${p} group by 1 order by 1`,
  },
  {
    what: "arithmetic on a person's property of mixed types",
    hogql:
      'select distinct_id, person.properties.age + 1 from events where person.properties.age > 30 order by timestamp',
    hand: (p) => sql`select e.distinct_id as a, (${num(sql`pe.properties->>'age'`)} + 1)::float8 as b
      from events e join persons pe on pe.id = e.person_id
      where e.project_id = ${p} and ${num(sql`pe.properties->>'age'`)} > 30 order by e.timestamp`,
  },
  {
    what: 'UNION ALL',
    hogql:
      "select distinct_id, kind from (select distinct_id, 'event' as kind from events where event = 'purchase' " +
      "union all select distinct_id, 'person' from person_distinct_ids) order by distinct_id, kind",
    hand: (p) => sql`select distinct_id as a, kind as b from (
      select e.distinct_id, 'event' as kind from events e where e.project_id = ${p} and e.event = 'purchase'
      union all select d.distinct_id, 'person' from person_distinct_ids d where d.project_id = ${p}) u
      order by 1, 2`,
  },
  {
    what: 'window functions',
    hogql:
      'select distinct_id, row_number() over (partition by distinct_id order by timestamp) as n, ' +
      'sum(properties.price) over (partition by distinct_id order by timestamp rows between unbounded preceding ' +
      'and current row) as running from events where properties.price > 0 order by distinct_id, n',
    hand: (p) => sql`select e.distinct_id as a,
      row_number() over (partition by e.distinct_id order by e.timestamp)::int as b,
      sum(${num(sql`e.properties->>'price'`)}) over (partition by e.distinct_id order by e.timestamp)::float8 as c
      from events e where e.project_id = ${p} and ${num(sql`e.properties->>'price'`)} > 0 order by 1, 2`,
  },
  {
    what: "text without an offset read in the project's timezone",
    hogql:
      "select count(), min(timestamp), max(timestamp) from events where timestamp >= '2024-03-10' and " +
      "timestamp < '2024-03-11' or timestamp between '2024-03-31 00:00:00' and '2024-03-31 03:00:00'",
    hand: (p, z) => {
      const local = (text: string) => sql`(${text}::timestamp at time zone ${z}::text)`;
      return sql`select count(*)::int as a, ${moment(sql`min(e.timestamp)`, z)} as b,
        ${moment(sql`max(e.timestamp)`, z)} as c from events e where e.project_id = ${p} and
        (e.timestamp >= ${local('2024-03-10 00:00')} and e.timestamp < ${local('2024-03-11 00:00')}
         or e.timestamp >= ${local('2024-03-31 00:00')} and e.timestamp <= ${local('2024-03-31 03:00')})`;
    },
  },
  {
    what: 'a property with nulls as a group',
    hogql: "select properties.$browser as b, count(), countIf(event = 'purchase') from events group by b order by b",
    hand: (p) => sql`select e.properties->>'$browser' as a, count(*)::int as b,
      count(*) filter (where e.event = 'purchase')::int as c
      from events e where e.project_id = ${p} group by 1 order by 1`,
  },
  {
    what: 'aggregates with the -If combinator',
    hogql:
      "select event, sumIf(toFloat(properties.price), distinct_id != 'anon'), minIf(timestamp, distinct_id = 'bob'), " +
      "uniqIf(distinct_id, properties.$browser = 'Chrome') from events group by event order by event",
    hand: (p, z) => sql`select e.event as a,
      (sum(${num(sql`e.properties->>'price'`)}) filter (where e.distinct_id <> 'anon'))::float8 as b,
      ${moment(sql`min(e.timestamp) filter (where e.distinct_id = 'bob')`, z)} as c,
      (count(distinct e.distinct_id) filter (where e.properties->>'$browser' = 'Chrome'))::int as d
      from events e where e.project_id = ${p} group by e.event order by e.event`,
  },
  {
    what: 'a RANGE frame over time: one microsecond before each row is strictly after it, newest first',
    hogql:
      "select distinct_id, toUnixTimestamp64Micro(timestamp), minIf(timestamp, event = 'pageview') over " +
      '(partition by distinct_id order by timestamp desc range between unbounded preceding and 1 preceding) ' +
      'from events order by distinct_id, timestamp',
    hand: (p, z) => sql`select e.distinct_id as a, (extract(epoch from e.timestamp) * 1000000)::float8 as b,
      ${moment(
        sql`min(e.timestamp) filter (where e.event = 'pageview') over (partition by e.distinct_id
          order by e.timestamp desc range between unbounded preceding and interval '1 microsecond' preceding)`,
        z,
      )} as c from events e where e.project_id = ${p} order by e.distinct_id, e.timestamp`,
  },
  {
    what: 'arraySort and the Unix time',
    hogql: 'select arraySort([3, 1, 2]), toUnixTimestamp(min(timestamp)) from events',
    hand: (p) => sql`select array[1, 2, 3]::int[] as a, floor(extract(epoch from min(e.timestamp)))::int as b
      from events e where e.project_id = ${p}`,
  },
  {
    what: 'LIMIT WITH TIES in a subquery: every row tying with the last',
    hogql: 'select count() from (select event from events order by event limit 1 with ties)',
    hand: (p) => sql`select count(*)::int as a from events e where e.project_id = ${p}
      and e.event = (select min(x.event) from events x where x.project_id = ${p})`,
  },
  {
    what: "a regular expression's whole match (\\0) in a replacement; endsWith",
    hogql:
      "select distinct distinct_id, replaceRegexpAll(distinct_id, '[aeiou]', '<\\\\0>'), " +
      "replaceRegexpOne(distinct_id, '(.)$', '\\\\1\\\\1'), endsWith(distinct_id, 'e') " +
      'from events order by distinct_id',
    hand: (p) => sql`select distinct e.distinct_id as a, regexp_replace(e.distinct_id, '[aeiou]', '<\\&>', 'g') as b,
      regexp_replace(e.distinct_id, '(.)$', '\\1\\1') as c, e.distinct_id like '%e' as d
      from events e where e.project_id = ${p} order by e.distinct_id`,
  },
  {
    what: 'IN a subquery of another table',
    hogql: 'select count() from events where distinct_id in (select distinct_id from person_distinct_ids)',
    hand: (p) => sql`select count(*)::int as a from events e where e.project_id = ${p}
      and e.distinct_id in (select d.distinct_id from person_distinct_ids d where d.project_id = ${p})`,
  },
];

async function viaHogQL(projectId: number, query: string): Promise<unknown[][]> {
  const res = await call('query_create', {
    key: org.key,
    params: { project_id: projectId },
    body: { query: { kind: 'HogQLQuery', query } },
  });
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
  return (res.body.results as unknown[][]).map((r) => r.map(normalized));
}

async function byHand(q: SQL): Promise<unknown[][]> {
  const rows = (await db.execute(q)) as unknown as Record<string, unknown>[];
  return rows.map((r) => Object.values(r));
}

for (const [project, zone] of [
  [ny, 'America/New_York'],
  [berlin, 'Europe/Berlin'],
] as const) {
  t.test(`${zone}: HogQL answers as SQL written by hand`, async (t) => {
    for (const c of cases) {
      const expected = await byHand(c.hand(project.id, zone));
      t.ok(expected.length, `${c.what}: the data set answers it`);
      t.same(await viaHogQL(project.id, c.hogql), expected, `${c.what}: ${c.hogql}`);
    }
  });
}

t.test('LIMIT WITH TIES of the whole query is refused: the answer has a row limit of its own', async (t) => {
  const res = await call('query_create', {
    key: org.key,
    params: { project_id: ny.id },
    body: { query: { kind: 'HogQLQuery', query: 'select event from events order by event limit 1 with ties' } },
  });
  t.equal(res.status, 400);
  t.match(res.body, { code: 'hogql_query_error', detail: /WITH TIES is supported in subqueries and CTEs only/ });
});
