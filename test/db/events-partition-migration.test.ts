// drizzle/0026 turns the unpartitioned events table into one partitioned by month. A database migrated to
// the migration before it is given events (months apart, one from 1990, a project's and another's), then
// migrated on: every row is there, unchanged, in its month's partition (the 1990 one in the default
// partition), every uuid is in event_uuids, ids go on from the same sequence, and a retried event is
// still ignored.
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import t from 'tap';
import { ingest } from '../../src/capture/ingest.js';
import { openDatabase } from '../../src/db/client.js';
import { queryRoleName } from '../../src/query/role-queries.js';
import { adminClient, testServerUrl, withDatabase } from '../helpers/db.js';

const base = testServerUrl();
const name = `t_${randomBytes(6).toString('hex')}`;
const admin = adminClient(base);
await admin.unsafe(`create database ${name}`);
const url = withDatabase(base, name);
const folder = await mkdtemp(join(tmpdir(), 'migrations-'));

// The migrations up to the one before 0026.
await cp('drizzle', folder, { recursive: true });
const journalFile = join(folder, 'meta', '_journal.json');
const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: { tag: string }[] };
const at = journal.entries.findIndex((e) => e.tag === '0026_events_partitioned');
if (at <= 0) throw new Error('the partitioning migration is not in the journal');
journal.entries = journal.entries.slice(0, at);
await writeFile(journalFile, JSON.stringify(journal));
const old = adminClient(url);
await migrate(drizzle(old) as never, { migrationsFolder: folder });
if ((await old`select to_regclass('event_uuids') as r`)[0]!.r !== null) throw new Error('not the old schema');

const [org] = await old`insert into organizations (name, slug) values ('Old', ${`old-${name}`}) returning id`;
const projects = await old`insert into projects (organization_id, name, api_token)
  values (${org!.id}, 'A', ${`phc_a_${name}`}), (${org!.id}, 'B', ${`phc_b_${name}`}) returning id`;
const [a, b] = projects.map((p) => Number(p.id)) as [number, number];
// 1,200 events of project A, one every 11 hours back from now (about 18 months), with persons, elements
// and properties of each kind; 1990 and a day ahead; and project B reusing some of A's uuids.
await old`insert into events (uuid, project_id, event, distinct_id, properties, timestamp, created_at,
    elements_chain, person_id)
  select gen_random_uuid(), ${a}, (array['$pageview', 'signup', '$autocapture'])[1 + i % 3], 'user-' || (i % 37),
    jsonb_build_object('n', i, 'nested', jsonb_build_object('ok', i % 2 = 0), 'list', jsonb_build_array(i, 'x')),
    date_trunc('second', now()) - make_interval(hours => i * 11) + make_interval(secs => (i % 60)::float8 / 7),
    now() - make_interval(mins => i), case when i % 5 = 0 then 'a:nth-child="1"' else '' end,
    case when i % 4 = 0 then null else i % 13 end
  from generate_series(0, 1199) as i`;
const far = [randomUUID(), randomUUID()];
await old`insert into events (uuid, project_id, event, distinct_id, timestamp) values
  (${far[0]!}, ${a}, 'ancient', 'old', '1990-01-15T10:00:00Z'),
  (${far[1]!}, ${a}, 'tomorrow', 'old', now() + interval '1 day')`;
await old`insert into events (uuid, project_id, event, distinct_id, timestamp)
  select uuid, ${b}, event, distinct_id, timestamp from events where project_id = ${a} and properties->>'n' < '2'`;
const rowsOf = (sql: typeof old) =>
  sql`select json_agg(e order by e.id)::text as rows, count(*)::int as n, max(id)::text as max from (
    select id, uuid, project_id, event, distinct_id, properties, timestamp, created_at, elements_chain, person_id
    from events) as e`;
const [before] = await rowsOf(old);
await old.end();

const database = await openDatabase({ url, poolSize: 2 });
const sql = adminClient(url);
t.teardown(async () => {
  await sql.end();
  await database.close();
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.unsafe(`drop role if exists ${queryRoleName(name)}`);
  await admin.end();
  await rm(folder, { recursive: true, force: true });
});

t.test('every row is kept, unchanged, in the partition of its month', async (t) => {
  const [after] = await rowsOf(sql);
  t.equal(after!.n, before!.n, `${before!.n} events before and after`);
  t.ok(after!.rows === before!.rows, 'every column of every row is what it was');
  t.equal((await sql`select relkind from pg_class where oid = 'events'::regclass`)[0]!.relkind, 'p');
  const misplaced = await sql`select tableoid::regclass::text as part, timestamp from events
    where tableoid::regclass::text <> case when timestamp < now() - interval '10 years' then 'events_default'
      else 'events_p' || to_char(timestamp at time zone 'UTC', 'YYYY_MM') end`;
  t.same(misplaced, [], 'each event is in its UTC month, the one from 1990 in the default partition');
  const [{ months }] = (await sql`select count(distinct date_trunc('month', timestamp at time zone 'UTC'))::int
    as months from events where timestamp > '2000-01-01'`) as unknown as [{ months: number }];
  const [{ parts }] = (await sql`select count(*)::int as parts from pg_inherits
    where inhparent = 'events'::regclass and inhrelid::regclass::text like 'events_p%'`) as unknown as [
    { parts: number },
  ];
  t.ok(months >= 18 && parts >= months, `${parts} month partitions for the ${months} months with events`);
  const [uuids] = await sql`select count(*)::int as n,
    count(*) filter (where not exists (select from events e where e.project_id = u.project_id and e.uuid = u.uuid
      and e.timestamp = u.timestamp))::int as stray from event_uuids u`;
  t.same(uuids, { n: before!.n, stray: 0 }, 'every event has its uuid row, with its timestamp');
  const [next] = await sql`insert into events (uuid, project_id, event, distinct_id, timestamp)
    values (gen_random_uuid(), ${a}, 'new', 'new', now()) returning id::text as id`;
  t.ok(BigInt(next!.id) > BigInt(before!.max), 'ids go on from the same sequence');
  await sql`delete from events where id = ${next!.id}`;
});

t.test("a migrated event's uuid sent again is ignored, a new one stored", async (t) => {
  const [stored] = await sql`select uuid::text, timestamp from events where project_id = ${a} and event = 'signup'
    order by timestamp limit 1`;
  const project = { id: a, ingested_event: true, anonymize_ips: false };
  const fresh = randomUUID();
  const now = new Date();
  const batch = [
    { uuid: stored!.uuid as string, event: 'signup', distinct_id: 'again', properties: {}, timestamp: now },
    { uuid: far[0]!, event: 'ancient', distinct_id: 'again', properties: {}, timestamp: new Date('1990-01-15') },
    { uuid: fresh, event: 'signup', distinct_id: 'again', properties: {}, timestamp: now },
  ].map((e) => ({ ...e, elements_chain: '' }));
  await ingest(database.db, project, batch, now);
  const rows = await sql`select uuid::text as uuid, count(*)::int as n, bool_or(distinct_id = 'again') as again
    from events where project_id = ${a} and uuid in (${stored!.uuid}, ${far[0]!}, ${fresh}) group by uuid`;
  t.same(
    Object.fromEntries(rows.map((r) => [r.uuid, [r.n, r.again]])),
    { [stored!.uuid]: [1, false], [far[0]!]: [1, false], [fresh]: [1, true] },
    'only the new uuid was stored',
  );
});
