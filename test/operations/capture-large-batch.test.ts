// A capture batch larger than one statement's share (about 1 MiB of JSON) is stored by several
// statements in one transaction: all of it, in order, or nothing.
import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { rows } from '../helpers/fingerprint.js';
import { capture, personOf, send, storedEvents, type RawEvent } from '../helpers/events.js';
import { jsonSlicesInTurns, type JsonSlice } from '../../src/core/turns.js';

const ctx = await buildTestApp(t);
const { db } = ctx;

// Each INSERT into events is logged with its transaction, so a test can tell how the batch was sent,
// and counted by a sequence, which a rollback does not take back; an event named `boom` fails its
// insert, as a database refusing a value would (a 400).
await db.execute(sql`create table ingest_statements (xid bigint, events int)`);
await db.execute(sql`create sequence ingest_statements_sent`);
await db.execute(sql`create function log_ingest_statement() returns trigger language plpgsql as $$
  begin
    perform nextval('ingest_statements_sent');
    insert into ingest_statements select txid_current(), count(*) from inserted;
    return null;
  end $$`);
await db.execute(sql`create trigger log_ingest_statement after insert on events referencing new table as inserted
  for each statement execute function log_ingest_statement()`);
await db.execute(sql`create function fail_boom() returns trigger language plpgsql as $$
  begin if new.event = 'boom' then raise exception 'refused' using errcode = '22023'; end if; return new; end $$`);
await db.execute(sql`create trigger fail_boom before insert on events for each row execute function fail_boom()`);

const pad = 'p'.repeat(1000);
/** About 2.7 MB of JSON: three statements or more. */
const COUNT = 2500;

function plainBatch(last = 'last'): RawEvent[] {
  return Array.from({ length: COUNT }, (_, i) => ({
    event: i === COUNT - 1 ? last : `e${i % 3}`,
    distinct_id: `u-${i % 200}`,
    properties: { i, pad },
  }));
}

/** Every event sets a person property, and the last one links two ids: the batch is replayed on persons. */
function personBatch(last = '$identify'): RawEvent[] {
  return Array.from({ length: COUNT }, (_, i) =>
    i === COUNT - 1
      ? { event: last, distinct_id: 'u-1', properties: { i, pad, $anon_distinct_id: 'u-2' } }
      : { event: `e${i % 3}`, distinct_id: `u-${i % 200}`, properties: { i, pad, $set: { last: i } } },
  );
}

async function stored(projectId: number) {
  const [counts] = await rows<Record<string, number | boolean>>(
    db,
    sql`select (select count(*)::int from events where project_id = ${projectId}) as events,
      (select count(*)::int from persons where project_id = ${projectId}) as persons,
      (select count(*)::int from person_distinct_ids where project_id = ${projectId}) as links,
      (select count(*)::int from event_definitions where project_id = ${projectId}) as event_definitions,
      (select count(*)::int from property_definitions where project_id = ${projectId}) as property_definitions,
      (select count(*)::int from event_properties where project_id = ${projectId}) as event_properties,
      (select ingested_event from projects where id = ${projectId}) as ingested_event`,
  );
  return counts!;
}

/** Statements that inserted into events since the last call, failed ones included. */
async function sent(): Promise<number> {
  const [r] = await rows<{ n: number }>(db, sql`select nextval('ingest_statements_sent')::int as n`);
  return r!.n;
}

async function statements() {
  const log = await rows<{ xid: string; events: number }>(db, sql`select xid::text, events from ingest_statements`);
  await db.execute(sql`delete from ingest_statements`);
  return { count: log.length, transactions: new Set(log.map((r) => r.xid)).size, events: log.map((r) => r.events) };
}

t.test('jsonSlicesInTurns writes the array JSON.stringify writes, cut between items', async (t) => {
  const items = Array.from({ length: 500 }, (_, i) => ({ i, s: 'x'.repeat(i % 50), nested: [i, null] }));
  const fn = (item: (typeof items)[number], i: number) => ({ ...item, at: i });
  const slices: JsonSlice[] = [];
  for await (const slice of jsonSlicesInTurns(items, fn, 2000)) slices.push(slice);
  t.ok(slices.length > 5, `${slices.length} slices`);
  t.same(
    slices.flatMap((s) => JSON.parse(s.json)),
    items.map(fn),
    'the slices hold every item once, in order',
  );
  t.ok(
    slices.every((s, k) => s.from === (k ? slices[k - 1]!.to : 0) && s.to > s.from),
    'each slice starts where the previous one ended',
  );
  t.ok(
    slices.every((s) => s.json.length < 2000 + 200),
    'no slice is larger than the bound by more than one item',
  );
  const one: JsonSlice[] = [];
  for await (const slice of jsonSlicesInTurns(items, fn, 10_000_000)) one.push(slice);
  t.same(one, [{ json: JSON.stringify(items.map(fn)), from: 0, to: items.length }], 'a small batch is one slice');
});

t.test('a large plain batch is stored whole, in order, by several statements of one transaction', async (t) => {
  const a = await makeTenant(db);
  await statements();
  await capture(ctx, a.project.api_token, plainBatch());
  const log = await statements();
  t.ok(log.count >= 3, `${log.count} statements inserted events (${log.events.join(', ')})`);
  t.equal(log.transactions, 1, 'in one transaction');
  const events = await storedEvents(db, a.project.id);
  t.same(
    events.map((e) => (e.properties as { i: number }).i),
    Array.from({ length: COUNT }, (_, i) => i),
    'every event, in the batch order',
  );
  t.same(await stored(a.project.id), {
    events: COUNT,
    persons: 200,
    links: 200,
    event_definitions: 4,
    property_definitions: 3,
    event_properties: 9 + 3,
    ingested_event: true,
  });
  const person = await personOf(db, a.project.id, 'u-7');
  t.ok(
    events.filter((e) => e.distinct_id === 'u-7').every((e) => e.person_id === person!.id),
    'the events of a distinct id in every slice have its one person',
  );
});

t.test('a large batch replayed on persons is stored whole by several statements', async (t) => {
  const a = await makeTenant(db);
  await statements();
  await capture(ctx, a.project.api_token, personBatch());
  const log = await statements();
  t.ok(log.count >= 3, `${log.count} statements inserted events`);
  t.equal(log.transactions, 1, 'in one transaction');
  const counts = await stored(a.project.id);
  t.equal(counts.events, COUNT);
  t.equal(counts.persons, 199, 'u-1 and u-2 are one person');
  const merged = (await personOf(db, a.project.id, 'u-2'))!;
  t.equal(merged.id, (await personOf(db, a.project.id, 'u-1'))!.id);
  t.equal(merged.is_identified, true);
  let last = 0;
  for (let i = 0; i < COUNT - 1; i++) if (i % 200 === 3) last = i;
  t.same((await personOf(db, a.project.id, 'u-3'))!.properties, { last }, 'the last $set of the batch wins');
  const events = await storedEvents(db, a.project.id);
  t.ok(
    events.filter((e) => e.distinct_id === 'u-2').every((e) => e.person_id === merged.id),
    'events sent before the merge have the merged person',
  );
});

for (const [path, batch] of [
  ['plain', plainBatch('boom')],
  ['replayed on persons', personBatch('boom')],
] as const) {
  t.test(`a large ${path} batch whose last statement fails stores nothing`, async (t) => {
    const a = await makeTenant(db);
    await statements();
    const before = await sent();
    const res = await send(ctx, 'capture_batch_create', {
      body: JSON.stringify({ api_key: a.project.api_token, batch }),
      headers: { 'content-type': 'application/json' },
    });
    t.equal(res.status, 400, res.raw);
    t.same(await stored(a.project.id), {
      events: 0,
      persons: 0,
      links: 0,
      event_definitions: 0,
      property_definitions: 0,
      event_properties: 0,
      ingested_event: false,
    });
    t.same(await statements(), { count: 0, transactions: 0, events: [] }, 'the log went with the transaction');
    // The sequence moved once for each statement that inserted (not the failing one, whose
    // statement trigger never ran), and once for the call here.
    const ran = (await sent()) - before - 1;
    t.ok(ran >= 2, `the ${ran} statements before the failing one ran, and were undone`);
  });
}
