// Ingestion's events are counted per name and UTC hour (drizzle/0035): each stored event once, a retried or
// duplicated uuid never again, a rejected request nothing, on the plain path, the persons' replay path and a batch
// large enough to go as several statements. Every count is checked against numbers written by hand and against the
// stored events themselves, before and after the deltas are folded.
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import t from 'tap';
import { foldEventCounts } from '../../src/event-rollups/fold.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { capture, send, type RawEvent } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { db } = ctx;

/** "event@hour" -> n, from the counts and their unfolded deltas. */
async function counted(projectId: number): Promise<Record<string, number>> {
  const rows = (await db.execute(sql`select event, to_char(hour at time zone 'UTC', 'HH24') as h, sum(n)::int as n
    from (select event, hour, n from event_counts where project_id = ${projectId}
          union all select event, hour, n from event_count_deltas where project_id = ${projectId}) as c
    group by 1, 2 having sum(n) <> 0 order by 1, 2`)) as unknown as { event: string; h: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [`${r.event}@${r.h}`, r.n]));
}

/** The same, counted over the stored events. */
async function stored(projectId: number): Promise<Record<string, number>> {
  const rows = (await db.execute(sql`select event, to_char("timestamp" at time zone 'UTC', 'HH24') as h,
      count(*)::int as n from events where project_id = ${projectId} group by 1, 2 order by 1, 2`)) as unknown as {
    event: string;
    h: string;
    n: number;
  }[];
  return Object.fromEntries(rows.map((r) => [`${r.event}@${r.h}`, r.n]));
}

const ev = (event: string, at: string, extra: RawEvent = {}): RawEvent => ({
  event,
  distinct_id: 'u1',
  timestamp: `2024-05-01T${at}:00Z`,
  uuid: randomUUID(),
  ...extra,
});

t.test('the plain path counts each stored event once; a retry and duplicates count nothing more', async (t) => {
  const { project } = await makeTenant(db);
  const batch = [ev('view', '10:05'), ev('view', '10:59'), ev('view', '11:00'), ev('buy', '10:30')];
  await capture(ctx, project.api_token, batch);
  t.same(await counted(project.id), { 'buy@10': 1, 'view@10': 2, 'view@11': 1 });
  // The same batch again (a client's retry: its uuids are stored) changes nothing.
  await capture(ctx, project.api_token, batch);
  t.same(await counted(project.id), { 'buy@10': 1, 'view@10': 2, 'view@11': 1 });
  // A batch holding one new event twice and two stored ones: the new one counts once.
  const fresh = ev('view', '11:30');
  await capture(ctx, project.api_token, [fresh, batch[0]!, { ...fresh }, batch[3]!]);
  t.same(await counted(project.id), { 'buy@10': 1, 'view@10': 2, 'view@11': 2 });
  t.same(await counted(project.id), await stored(project.id), 'the counts are the stored events');
  await foldEventCounts(db);
  t.same(await counted(project.id), { 'buy@10': 1, 'view@10': 2, 'view@11': 2 }, 'and stay so folded');
});

t.test('a rejected request counts nothing', async (t) => {
  const { project } = await makeTenant(db);
  await capture(ctx, project.api_token, [ev('view', '09:00')]);
  const res = await send(ctx, 'capture_batch_create', {
    body: JSON.stringify({ api_key: project.api_token, batch: [ev('view', '09:10'), { distinct_id: 'u1' }] }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(res.status, 400, 'an event without a name rejects the batch');
  t.same(await counted(project.id), { 'view@09': 1 });
});

t.test('the replay path (persons linked and changed) counts each stored event once', async (t) => {
  const { project } = await makeTenant(db);
  const identify = ev('$identify', '12:00', { distinct_id: 'user', properties: { $anon_distinct_id: 'anon' } });
  const batch = [
    ev('view', '11:50', { distinct_id: 'anon' }),
    identify,
    ev('view', '12:10', { distinct_id: 'user', properties: { $set: { plan: 'pro' } } }),
  ];
  await capture(ctx, project.api_token, batch);
  t.same(await counted(project.id), { '$identify@12': 1, 'view@11': 1, 'view@12': 1 });
  await capture(ctx, project.api_token, [...batch, { ...identify }, ev('view', '12:20', { distinct_id: 'anon' })]);
  t.same(await counted(project.id), { '$identify@12': 1, 'view@11': 1, 'view@12': 2 });
  t.same(await counted(project.id), await stored(project.id), 'the counts are the stored events');
});

t.test('a batch sent as several statements counts each of its events once', async (t) => {
  const { project } = await makeTenant(db);
  // About 2.4 MiB of JSON, and 1.2 MiB replayed: more than one statement's share (1 MiB) on both paths.
  const pad = 'x'.repeat(8_000);
  const plain = Array.from({ length: 300 }, (_, i) =>
    ev(i % 3 ? 'view' : 'buy', `1${i % 4}:00`, { properties: { pad } }),
  );
  await capture(ctx, project.api_token, plain);
  t.same(await counted(project.id), {
    'buy@10': 25,
    'buy@11': 25,
    'buy@12': 25,
    'buy@13': 25,
    'view@10': 50,
    'view@11': 50,
    'view@12': 50,
    'view@13': 50,
  });
  const replayed = plain.map((e, i) => (i % 2 ? e : { ...e, uuid: randomUUID(), properties: { pad, $set: { i } } }));
  await capture(ctx, project.api_token, replayed);
  // The even events again under new uuids (the odd ones are stored): hours 10 and 12, a third of them buys.
  t.same(await counted(project.id), {
    'buy@10': 50,
    'buy@11': 25,
    'buy@12': 50,
    'buy@13': 25,
    'view@10': 100,
    'view@11': 50,
    'view@12': 100,
    'view@13': 50,
  });
  t.same(await counted(project.id), await stored(project.id), 'the counts are the stored events');
});
