import t from 'tap';
import { eq, sql } from 'drizzle-orm';
import { event_definitions, person_distinct_ids, persons } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { capture, definitions, iso, personOf, send, storedEvents } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { db } = ctx;

t.test('timestamps: clock-skew correction, offset, and limits', async (t) => {
  const a = await makeTenant(db);
  const before = Date.now();
  await capture(
    ctx,
    a.project.api_token,
    [
      { event: 'skewed', distinct_id: 'd', timestamp: '2020-01-01T00:00:00Z' },
      { event: 'own sent_at', distinct_id: 'd', timestamp: '2020-01-01T00:00:00Z', sent_at: '2020-01-01T00:01:00Z' },
      {
        event: 'ignored sent_at',
        distinct_id: 'd',
        timestamp: '2021-05-05T05:05:05.123Z',
        properties: { $ignore_sent_at: true },
      },
      { event: 'offset', distinct_id: 'd', offset: 60_000 },
      { event: 'none', distinct_id: 'd' },
      { event: 'far future', distinct_id: 'd', timestamp: '2999-01-01T00:00:00Z', sent_at: '2999-01-01T00:00:00Z' },
      { event: 'unreadable', distinct_id: 'd', timestamp: 'yesterday-ish' },
    ],
    { sent_at: '2020-01-01T00:00:10Z' },
  );
  const after = Date.now();
  const at = Object.fromEntries((await storedEvents(db, a.project.id)).map((r) => [r.event, r.timestamp.getTime()]));
  const within = (name: string, lo: number, hi: number) =>
    t.ok(at[name]! >= lo && at[name]! <= hi, `${name}: ${iso(at[name]!)}`);
  within('skewed', before - 10_000, after - 10_000);
  within('own sent_at', before - 60_000, after - 60_000);
  t.equal(iso(at['ignored sent_at']!), '2021-05-05T05:05:05.123Z');
  within('offset', before - 60_000, after - 60_000);
  within('none', before, after);
  within('unreadable', before, after);

  const future = Date.now() + 48 * 3_600_000;
  await capture(ctx, a.project.api_token, [{ event: 'tomorrow+1', distinct_id: 'd', timestamp: iso(future) }]);
  const rows = await storedEvents(db, a.project.id);
  t.ok(
    rows.find((r) => r.event === 'tomorrow+1')!.timestamp.getTime() < future - 3_600_000,
    'more than 23 h ahead becomes now',
  );
  within('far future', before, Date.now());
});

t.test('persons: one per distinct id, $set and $set_once, $unset', async (t) => {
  const a = await makeTenant(db);
  await capture(ctx, a.project.api_token, [
    { event: 'a', distinct_id: 'u1', properties: { $set: { plan: 'free', seen: 1 }, $set_once: { first: 'x' } } },
    { event: 'b', distinct_id: 'u1', properties: { $set: { plan: 'pro' }, $set_once: { first: 'y', source: 'ad' } } },
    { event: 'c', distinct_id: 'u2', $set: { top_level: true } },
    { event: 'd', distinct_id: 42 },
  ]);
  await capture(ctx, a.project.api_token, [{ event: 'e', distinct_id: 'u1', properties: { $unset: ['seen'] } }]);
  const p1 = (await personOf(db, a.project.id, 'u1'))!;
  t.same(p1.properties, { plan: 'pro', first: 'x', source: 'ad' });
  t.equal(p1.is_identified, false);
  t.same((await personOf(db, a.project.id, 'u2'))!.properties, { top_level: true }, 'a top-level $set counts too');
  t.ok(await personOf(db, a.project.id, '42'), 'a numeric distinct id is its text');
  const rows = await storedEvents(db, a.project.id);
  t.ok(rows.filter((r) => r.distinct_id === 'u1').every((r) => r.person_id === p1.id));
  t.equal((await db.select().from(persons).where(eq(persons.project_id, a.project.id))).length, 3);

  await capture(ctx, a.project.api_token, [
    { event: 'anon', distinct_id: 'nobody', properties: { $process_person_profile: false } },
  ]);
  t.equal(
    (await storedEvents(db, a.project.id)).find((r) => r.event === 'anon')!.person_id,
    null,
    'opting out leaves no person',
  );
  t.notOk(await personOf(db, a.project.id, 'nobody'));
});

t.test('persons: $identify links and merges, earlier events follow', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  await capture(ctx, token, [
    { event: 'view', distinct_id: 'anon-1', properties: { $set: { color: 'red', shared: 'anon' } } },
  ]);
  const anon = (await personOf(db, a.project.id, 'anon-1'))!;
  await capture(ctx, token, [{ event: 'login', distinct_id: 'user@x', properties: { $set: { shared: 'user' } } }]);
  await capture(ctx, token, [
    {
      event: '$identify',
      distinct_id: 'user@x',
      properties: { $anon_distinct_id: 'anon-1', $set: { email: 'user@x' } },
    },
  ]);
  const merged = (await personOf(db, a.project.id, 'anon-1'))!;
  const user = (await personOf(db, a.project.id, 'user@x'))!;
  t.equal(merged.id, user.id, 'both ids now name one person');
  t.not(merged.id, anon.id, 'the anonymous person was merged into the identified one');
  t.same(user.properties, { color: 'red', shared: 'user', email: 'user@x' }, 'the identified person wins conflicts');
  t.equal(user.is_identified, true);
  t.equal((await db.select().from(persons).where(eq(persons.id, anon.id))).length, 0);
  const rows = await storedEvents(db, a.project.id);
  t.ok(
    rows.every((r) => r.person_id === user.id),
    'earlier anonymous events now carry the merged person',
  );

  // A fresh anonymous id is simply added; an already identified one is not merged away.
  await capture(ctx, token, [
    { event: '$identify', distinct_id: 'user@x', properties: { $anon_distinct_id: 'anon-2' } },
  ]);
  t.equal((await personOf(db, a.project.id, 'anon-2'))!.id, user.id);
  await capture(ctx, token, [{ event: '$identify', distinct_id: 'other@x', properties: { $anon_distinct_id: 'x' } }]);
  await capture(ctx, token, [
    { event: '$identify', distinct_id: 'user@x', properties: { $anon_distinct_id: 'other@x' } },
  ]);
  t.not((await personOf(db, a.project.id, 'other@x'))!.id, user.id, 'two identified persons stay apart');
  await capture(ctx, token, [{ event: '$create_alias', distinct_id: 'user@x', properties: { alias: 'crm-77' } }]);
  t.equal((await personOf(db, a.project.id, 'crm-77'))!.id, user.id, '$create_alias links the alias');

  // Within one batch: events before the identify follow the person too.
  await capture(ctx, token, [
    { event: 'x', distinct_id: 'anon-9', properties: { $set_once: { ref: 'ad' } } },
    { event: '$identify', distinct_id: 'new@x', properties: { $anon_distinct_id: 'anon-9' } },
    { event: 'y', distinct_id: 'new@x' },
  ]);
  const fresh = (await personOf(db, a.project.id, 'new@x'))!;
  t.equal((await personOf(db, a.project.id, 'anon-9'))!.id, fresh.id);
  t.same(fresh.properties, { ref: 'ad' });
  const batchRows = (await storedEvents(db, a.project.id)).slice(-3);
  t.ok(batchRows.every((r) => r.person_id === fresh.id));
});

t.test('concurrent batches about the same people stay consistent', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const requests = Array.from({ length: 8 }, (_, i) =>
    capture(ctx, token, [
      { event: 'tick', distinct_id: 'c1', properties: { $set: { [`k${i}`]: i } } },
      { event: 'tick', distinct_id: 'c2' },
      { event: '$identify', distinct_id: 'c1', properties: { $anon_distinct_id: `a${i}` } },
    ]),
  );
  await Promise.all(requests);
  const c1 = (await personOf(db, a.project.id, 'c1'))!;
  t.same(Object.keys(c1.properties).sort(), ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'], 'no update was lost');
  const links = await db.select().from(person_distinct_ids).where(eq(person_distinct_ids.project_id, a.project.id));
  t.equal(links.length, 10);
  t.equal(links.filter((l) => l.person_id === c1.id).length, 9);
  t.equal((await db.select().from(persons).where(eq(persons.project_id, a.project.id))).length, 2);
  t.equal((await storedEvents(db, a.project.id)).length, 24);
});

t.test('concurrent plain batches about the same new people make one person each', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  await Promise.all(
    Array.from({ length: 8 }, () =>
      capture(ctx, token, [
        { event: 'view', distinct_id: 'n1' },
        { event: 'view', distinct_id: 'n2' },
        { event: 'anon', distinct_id: 'n3', properties: { $process_person_profile: false } },
      ]),
    ),
  );
  const n1 = (await personOf(db, a.project.id, 'n1'))!;
  const n2 = (await personOf(db, a.project.id, 'n2'))!;
  t.not(n1.id, n2.id);
  t.notOk(await personOf(db, a.project.id, 'n3'), 'opting out still leaves no person');
  t.equal(
    (await db.select().from(persons).where(eq(persons.project_id, a.project.id))).length,
    2,
    'no duplicate person',
  );
  const rows = await storedEvents(db, a.project.id);
  t.equal(rows.length, 24);
  t.ok(rows.every((r) => r.person_id === (r.distinct_id === 'n1' ? n1.id : r.distinct_id === 'n2' ? n2.id : null)));

  // A retried plain batch whose events are all stored changes nothing, not even for an id it names.
  const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  await capture(ctx, token, [{ event: 'once', distinct_id: 'n4', uuid }]);
  const n4 = (await personOf(db, a.project.id, 'n4'))!;
  await db.delete(persons).where(eq(persons.id, n4.id));
  await capture(ctx, token, [{ event: 'once', distinct_id: 'n4', uuid }]);
  t.notOk(await personOf(db, a.project.id, 'n4'), 'no person is made for events that were not stored');
  t.equal((await storedEvents(db, a.project.id)).filter((r) => r.event === 'once').length, 1);
});

t.test("plain batches racing merges of the same people: every event ends on its id's person", async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const ids = 12;
  const requests: Promise<void>[] = [];
  let sent = 0;
  for (let round = 0; round < 6; round++) {
    for (let w = 0; w < 6; w++) {
      const i = (round * 5 + w) % ids;
      requests.push(
        capture(
          ctx,
          token,
          Array.from({ length: 8 }, (_, k) => ({ event: 'view', distinct_id: `anon-${(i + k) % ids}` })),
        ),
      );
      sent += 8;
      if (w % 2 === 0) {
        requests.push(
          capture(ctx, token, [
            { event: '$identify', distinct_id: `user-${i % 3}`, properties: { $anon_distinct_id: `anon-${i}` } },
          ]),
        );
        sent += 1;
      }
      if (w === 3) {
        requests.push(
          capture(ctx, token, [
            { event: '$merge_dangerously', distinct_id: `user-${i % 3}`, properties: { alias: `user-${(i + 1) % 3}` } },
          ]),
        );
        sent += 1;
      }
    }
  }
  await Promise.all(requests);
  const links = new Map(
    (await db.select().from(person_distinct_ids).where(eq(person_distinct_ids.project_id, a.project.id))).map((l) => [
      l.distinct_id,
      l.person_id,
    ]),
  );
  const people = new Set(
    (await db.select().from(persons).where(eq(persons.project_id, a.project.id))).map((p) => p.id),
  );
  const rows = await storedEvents(db, a.project.id);
  t.equal(rows.length, sent);
  t.same(
    rows.filter((r) => r.person_id !== links.get(r.distinct_id)),
    [],
    "each event carries its distinct id's person",
  );
  t.ok(
    [...links.values()].every((p) => people.has(p)),
    'every link names a live person',
  );
  t.ok(
    [...people].every((p) => [...links.values()].includes(p)),
    'no person is left without an id',
  );
});

t.test('event definitions: created on first sight, last_seen_at kept', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const start = Date.now();
  await capture(ctx, token, [
    { event: '$pageview', distinct_id: 'd' },
    { event: 'signed up', distinct_id: 'd' },
    { event: '$pageview', distinct_id: 'd' },
  ]);
  const defs = await definitions(db, a.project.id);
  t.same(
    defs.map((d) => d.name),
    ['$pageview', 'signed up'],
  );
  t.ok(defs.every((d) => d.last_seen_at!.getTime() >= start - 1000 && d.created_at!.getTime() >= start - 1000));
  const old = new Date('2024-01-01T00:00:00Z');
  await db.update(event_definitions).set({ last_seen_at: old }).where(eq(event_definitions.project_id, a.project.id));
  await capture(ctx, token, [{ event: 'signed up', distinct_id: 'd' }]);
  const after = await definitions(db, a.project.id);
  t.ok(
    after.find((d) => d.name === 'signed up')!.last_seen_at!.getTime() >= start - 1000,
    'last_seen_at moved forward',
  );
  t.equal(
    after.find((d) => d.name === '$pageview')!.last_seen_at!.toISOString(),
    old.toISOString(),
    'unseen names keep theirs',
  );
  t.equal(after.length, 2, 'no duplicate definition');
});

t.test('autocapture elements become elements_chain', async (t) => {
  const a = await makeTenant(db);
  await capture(ctx, a.project.api_token, [
    {
      event: '$autocapture',
      distinct_id: 'd',
      properties: {
        $elements: [
          {
            tag_name: 'button',
            $el_text: 'Say "hi"',
            attr__class: 'btn primary',
            nth_child: 2,
            nth_of_type: 1,
            attr__id: 'go',
          },
          { tag_name: 'a', attr__href: '/home', nth_child: 1, nth_of_type: 1 },
        ],
      },
    },
    { event: 'chained', distinct_id: 'd', elements_chain: 'div.x:nth-child="1"nth-of-type="1"' },
  ]);
  const rows = await storedEvents(db, a.project.id);
  t.equal(
    rows[0]!.elements_chain,
    'button.btn.primary:attr__class="btn primary"attr__id="go"attr_id="go"nth-child="2"nth-of-type="1"text="Say ' +
      '\\"hi\\"";a:attr__href="/home"href="/home"nth-child="1"nth-of-type="1"',
  );
  t.notOk('$elements' in rows[0]!.properties, 'the raw list is not kept in properties');
  t.equal(rows[1]!.elements_chain, 'div.x:nth-child="1"nth-of-type="1"');
  const odd = await send(ctx, 'capture_batch_create', {
    body: JSON.stringify({
      api_key: a.project.api_token,
      batch: [{ event: 'nul\u0000name', distinct_id: 'd', properties: { v: 'a\u0000b' } }],
    }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(odd.status, 200, 'characters PostgreSQL cannot store are replaced, not a 500');
});

t.test('a batch that fails in the database leaves nothing behind', async (t) => {
  const a = await makeTenant(db);
  // A trigger stands in for any failure half-way through the writes.
  await db.execute(sql`create or replace function refuse_boom() returns trigger language plpgsql as $$
    begin if new.event = 'boom' then raise exception 'boom refused'; end if; return new; end $$`);
  await db.execute(sql`create trigger refuse_boom before insert on events for each row execute function refuse_boom()`);
  t.teardown(() => db.execute(sql`drop trigger if exists refuse_boom on events`));
  const res = await ctx.inject({
    method: 'POST',
    url: '/batch/',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({
      api_key: a.project.api_token,
      batch: [
        { event: 'fine', distinct_id: 'p1', properties: { $set: { a: 1 } } },
        { event: 'boom', distinct_id: 'p2' },
      ],
    }),
  });
  t.equal(res.statusCode, 500);
  t.same(res.json(), { type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
  t.same(await storedEvents(db, a.project.id), []);
  t.same(await definitions(db, a.project.id), [], 'no definition either');
  t.notOk(await personOf(db, a.project.id, 'p1'), 'no person either');
});
