// Events are partitioned by UTC month (drizzle/0026). Captured events land in their month's partition, or in
// the default partition when their month has none (1990, say); a retried uuid is ignored wherever it lives;
// the worker's job makes the partitions the default partition needs and moves their events; retention
// (EVENTS_RETENTION_DAYS) drops whole months older than it, with their uuids, keeping a month that straddles
// the cutoff whole.
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import t from 'tap';
import { JobEngine } from '../../src/batch-exports/engine.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { rowsOf } from '../../src/db/queries/util.js';
import { ingest } from '../../src/capture/ingest.js';
import type { CapturedEvent } from '../../src/capture/normalize.js';
import { sqlState } from '../../src/core/sql-state.js';
import {
  EventsMaintenance,
  listPartitions,
  MAINTENANCE_QUEUE,
  maintainEvents,
} from '../../src/event-partitions/index.js';
import { buildTestApp } from '../helpers/app.js';
import { capture, iso } from '../helpers/events.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const DAY = 86_400_000;
const now = new Date();
const month = (y: number, m: number, d = 1) => new Date(Date.UTC(y, m, d, 12));
const y = now.getUTCFullYear();
const m = now.getUTCMonth();
const partName = (d: Date) => `events_p${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;

/** Where each uuid of the project is stored, and how often: `{uuid: [partition, count]}`. */
async function placed(projectId: number, uuids: string[]): Promise<Record<string, [string, number]>> {
  const rows = rowsOf<{ uuid: string; part: string; n: number }>(
    await db.execute(sql`select uuid::text as uuid, min(tableoid::regclass::text) as part, count(*)::int as n
      from events where project_id = ${projectId} and uuid::text = any(${sql.param(uuids)}::text[]) group by uuid`),
  );
  return Object.fromEntries(rows.map((r) => [r.uuid, [r.part, r.n]]));
}

/** Uuid rows without their event, and events without their uuid row (both must be 0). */
async function strays(): Promise<{ orphans: number; missing: number }> {
  const [r] = rowsOf<{ orphans: number; missing: number }>(
    await db.execute(sql`select
      (select count(*) from event_uuids u where not exists (select from events e
        where e.project_id = u.project_id and e.uuid = u.uuid and e.timestamp = u.timestamp))::int as orphans,
      (select count(*) from events e where not exists (select from event_uuids u
        where u.project_id = e.project_id and u.uuid = e.uuid))::int as missing`),
  );
  return r!;
}

const ev = (uuid: string, at: Date, distinct_id = 'first') => ({ uuid, event: 'e', distinct_id, timestamp: iso(+at) });
const current = randomUUID();
const lastMonth = randomUUID(); // the 2nd of last month, before the retention cutoff below but in a kept month
const yearsAgo = randomUUID(); // three years ago: the default partition until the job makes its month
const ancient = randomUUID(); // 1990: older than the ten years the job makes partitions for
const at = {
  [current]: now,
  [lastMonth]: month(y, m - 1, 2),
  [yearsAgo]: month(y - 3, m, 10),
  [ancient]: new Date('1990-01-15T10:00:00Z'),
};
const all = Object.keys(at);

t.test('events land in their month, or the default partition; a retried uuid is ignored', async (t) => {
  await capture(
    ctx,
    a.project.api_token,
    all.map((u) => ev(u, at[u]!)),
  );
  t.same(await placed(a.project.id, all), {
    [current]: [partName(now), 1],
    [lastMonth]: [partName(at[lastMonth]!), 1],
    [yearsAgo]: ['events_default', 1],
    [ancient]: ['events_default', 1],
  });
  // Plain batches and batches replayed on persons ($identify) both skip stored uuids.
  await capture(
    ctx,
    a.project.api_token,
    all.map((u) => ev(u, at[u]!, 'again')),
  );
  await capture(ctx, a.project.api_token, [
    ...all.map((u) => ev(u, at[u]!, 'again')),
    { event: '$identify', distinct_id: 'again', properties: { $anon_distinct_id: 'anon' } },
  ]);
  const twice = await placed(a.project.id, all);
  t.same(
    all.map((u) => twice[u]![1]),
    [1, 1, 1, 1],
    'each stored once',
  );
  const firsts = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from events
      where project_id = ${a.project.id} and distinct_id = 'first'`),
  );
  t.equal(firsts[0]!.n, 4, 'the first copy of each is the one kept');
  // The same uuids in another project are other events.
  await capture(ctx, b.project.api_token, [ev(current, now), ev(ancient, at[ancient]!)]);
  t.same(Object.keys(await placed(b.project.id, all)).sort(), [current, ancient].sort());

  for (const u of [ancient, current]) {
    const res = await call('events_retrieve', { key: a.key, params: { project_id: a.project.id, id: u } });
    t.equal(res.status, 200);
    t.equal((res.body as { distinct_id: string }).distinct_id, 'first', 'retrieved by uuid from any partition');
  }
  const other = randomUUID();
  await capture(ctx, b.project.api_token, [ev(other, now)]);
  const wall = await call('events_retrieve', { key: a.key, params: { project_id: a.project.id, id: other } });
  t.equal(wall.status, 404, "another project's event is not found");
  t.same(await strays(), { orphans: 0, missing: 0 });
});

t.test("the worker's job makes the partitions the default partition needs, at start and hourly", async (t) => {
  const engine = new JobEngine(ctx.database, {
    supervise: true,
    retryLimit: 0,
    retryDelaySeconds: 1,
    runTimeoutSeconds: 60,
  });
  const passes: number[] = [];
  const job = new EventsMaintenance(db, () => engine.boss(), {
    retentionDays: undefined,
    done: (r) => passes.push(r.created),
  });
  ctx.beforeClose(async () => {
    await job.stop();
    await engine.stop();
  });
  await job.start();
  const boss = await engine.boss();
  t.ok(
    (await boss.getSchedules()).some((s) => s.name === MAINTENANCE_QUEUE && s.cron === '23 * * * *'),
    'scheduled hourly',
  );
  for (let i = 0; i < 200 && !passes.length; i++) await new Promise((r) => setTimeout(r, 100));
  t.ok(passes[0]! >= 1, 'the pass queued at start ran and made a partition');
  const where = await placed(a.project.id, all);
  t.equal(where[yearsAgo]![0], partName(at[yearsAgo]!), "the 3-year-old event moved into its month's partition");
  t.equal(where[ancient]![0], 'events_default', 'the 1990 event stays in the default partition');
  t.same(
    Object.values(where).map((w) => w[1]),
    [1, 1, 1, 1],
    'nothing lost or doubled by the move',
  );
  await capture(ctx, a.project.api_token, [ev(yearsAgo, at[yearsAgo]!, 'again')]);
  t.equal((await placed(a.project.id, [yearsAgo]))[yearsAgo]![1], 1, 'a moved uuid is still ignored when retried');
  t.same(await strays(), { orphans: 0, missing: 0 });
});

t.test('retention drops whole months older than the cutoff and forgets their uuids', async (t) => {
  // The cutoff falls on the 11th of last month: the month three years ago goes whole, last month straddles
  // the cutoff and is kept whole (its event of the 2nd with it), the 1990 event leaves the default partition.
  const days = Math.floor((now.getTime() - month(y, m - 1, 11).getTime()) / DAY);
  const result = await maintainEvents(db, now, days);
  t.ok(result.dropped >= 1, `${result.dropped} partitions dropped`);
  t.equal(result.deleted, 2, "the 1990 events (a's and b's) deleted from the default partition");
  const left = await placed(a.project.id, all);
  t.same(Object.keys(left).sort(), [current, lastMonth].sort(), 'the events of kept months, and only them');
  const parts = (await listPartitions(db)).map((p) => p.name);
  t.notOk(parts.includes(partName(at[yearsAgo]!)), 'the old month is gone');
  t.ok(parts.includes(partName(at[lastMonth]!)) && parts.includes(partName(now)), 'kept months stay');
  const bound = (await listPartitions(db)).find((p) => p.name === partName(now))?.bound ?? '';
  const start = new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
  t.match(bound, new RegExp(`^FOR VALUES FROM \\('${start} 00:00:00\\+00'\\)`), `${bound}: a UTC month`);
  t.same(await strays(), { orphans: 0, missing: 0 }, 'the uuids of the dropped events are forgotten');

  // A forgotten uuid sent again is a new event; a kept one is still ignored.
  await capture(
    ctx,
    a.project.api_token,
    all.map((u) => ev(u, at[u]!, 'late')),
  );
  const after = await placed(a.project.id, all);
  t.same(
    all.map((u) => after[u]![1]),
    [1, 1, 1, 1],
  );
  const late = rowsOf<{ uuid: string }>(
    await db.execute(sql`select uuid::text as uuid from events
      where project_id = ${a.project.id} and distinct_id = 'late'`),
  ).map((r) => r.uuid);
  t.same(late.sort(), [yearsAgo, ancient].sort(), 'only the dropped events were stored again');
  // The next pass deletes them again and makes no partition for a month retention drops.
  const again = await maintainEvents(db, now, days);
  t.equal(again.deleted, 2);
  t.equal(again.created, 0);
  t.same(Object.keys(await placed(a.project.id, all)).sort(), [current, lastMonth].sort());
});

t.test("deleting a person's events forgets their uuids, as before partitioning", async (t) => {
  const u = randomUUID();
  await capture(ctx, a.project.api_token, [{ uuid: u, event: 'x', distinct_id: 'gone', timestamp: iso(+now) }]);
  const [person] = rowsOf<{ uuid: string }>(
    await db.execute(sql`select p.uuid::text from persons p join person_distinct_ids d on d.person_id = p.id
      where d.project_id = ${a.project.id} and d.distinct_id = 'gone'`),
  );
  const res = await call('persons_destroy', {
    key: a.key,
    params: { project_id: a.project.id, id: person!.uuid },
    query: { delete_events: true },
  });
  t.equal(res.status, 202);
  t.same(await placed(a.project.id, [u]), {});
  await capture(ctx, a.project.api_token, [{ uuid: u, event: 'x', distinct_id: 'back', timestamp: iso(+now) }]);
  t.same(await placed(a.project.id, [u]), { [u]: [partName(now), 1] }, 'the uuid sent again is stored');
  t.same(await strays(), { orphans: 0, missing: 0 });
});

t.test('deleting a project deletes its events and uuids; a batch for a deleted project stores nothing', async (t) => {
  // events and event_uuids have no foreign key (drizzle/0028): a trigger deletes them with the project, and
  // ingestion checks the project once per statement.
  const c = await makeTenant(db);
  const plain = randomUUID();
  const identify = randomUUID();
  await capture(ctx, c.project.api_token, [
    { uuid: plain, event: 'x', distinct_id: 'c1', timestamp: iso(+now) },
    { uuid: identify, event: '$identify', distinct_id: 'c2', properties: { $anon_distinct_id: 'c1' } },
  ]);
  t.same(Object.keys(await placed(c.project.id, [plain, identify])).sort(), [plain, identify].sort());
  await db.execute(sql`delete from projects where id = ${c.project.id}`);
  const left = async () =>
    rowsOf<{ n: number }>(
      await db.execute(sql`select ((select count(*) from events where project_id = ${c.project.id})
        + (select count(*) from event_uuids where project_id = ${c.project.id}))::int as n`),
    )[0]!.n;
  t.equal(await left(), 0, 'its events and uuids went with it');
  const gone = { id: c.project.id, ingested_event: true, anonymize_ips: false };
  const batch = (e: Partial<CapturedEvent>) => [
    { uuid: randomUUID(), event: 'y', distinct_id: 'c3', properties: {}, timestamp: now, elements_chain: '', ...e },
  ];
  for (const [path, events] of [
    ['plain', batch({})],
    ['replayed', batch({ properties: { $set: { a: 1 } } })],
  ] as const) {
    const err = await ingest(db, gone, events, now).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.equal(sqlState(err), '23503', `the ${path} statement fails as the foreign key did`);
  }
  t.equal(await left(), 0);
  t.same(await strays(), { orphans: 0, missing: 0 });
});

t.test('EVENTS_RETENTION_DAYS: unset keeps everything, else a whole number of days', async (t) => {
  t.equal(loadConfig({}).eventsRetentionDays, undefined);
  t.equal(loadConfig({ EVENTS_RETENTION_DAYS: '90' }).eventsRetentionDays, 90);
  for (const bad of ['0', '-1', '1.5', 'forever']) {
    t.throws(() => loadConfig({ EVENTS_RETENTION_DAYS: bad }), ConfigError, bad);
  }
});

t.test('a day ahead of now is in its partition, made ahead', async (t) => {
  const u = randomUUID();
  const tomorrow = new Date(now.getTime() + 20 * 3_600_000);
  await capture(ctx, b.project.api_token, [ev(u, tomorrow)]);
  t.same(await placed(b.project.id, [u]), { [u]: [partName(tomorrow), 1] });
});
