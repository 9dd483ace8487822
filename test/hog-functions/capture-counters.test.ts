// Through capture: the drop template's counters, and the counters of many concurrent requests (written
// together, one statement at a time) adding up to every event; a write that fails for one function keeps the
// others' counts.
import t from 'tap';
import { sql } from 'drizzle-orm';
import { captureFixture } from './capture-fixture.js';
import { randomUUID } from 'node:crypto';
import { addMetrics } from '../../src/hog-functions/metric-writes.js';

const { call, db, a, P, capture, create } = await captureFixture(t);

const stored = async (name: string) =>
  (
    (await db.execute(
      sql`select properties from events where project_id = ${a.project.id} and event = ${name} order by
        (properties->>'n')::int`,
    )) as unknown as { properties: Record<string, unknown> }[]
  ).map((r) => {
    const { $ip: _ip, ...rest } = r.properties;
    return rest;
  });

const disable = (id: string) =>
  call('hog_functions_partial_update', { key: a.key, params: { ...P, id }, body: { enabled: false } });
const totals = async (id: string) =>
  (await call('hog_functions_metrics_totals_retrieve', { key: a.key, params: { ...P, id } })).body.totals;

t.test('the drop template drops what its filters match', async (t) => {
  const drop = await create({
    template_id: 'template-drop-events',
    filters: { events: [{ id: 'noise', type: 'events' }] },
  });
  await capture([
    { event: 'noise', properties: { n: 1 } },
    { event: 'signal', properties: { n: 2 } },
  ]);
  t.same(await stored('noise'), []);
  t.equal((await stored('signal')).length, 1);
  t.match(await totals(drop), { dropped: 1, filtered: 1 });
  await disable(drop);
});

t.test('counters of concurrent requests add up', async (t) => {
  const set = await create({
    template_id: 'template-set-properties',
    inputs: { properties: { value: { c: 'yes' } } },
  });
  await Promise.all(
    Array.from({ length: 20 }, (_, r) =>
      capture(Array.from({ length: 5 }, (_, i) => ({ event: 'many', properties: { n: r * 5 + i } }))),
    ),
  );
  const rows = await stored('many');
  t.equal(rows.length, 100);
  t.ok(rows.every((p) => p.c === 'yes'));
  t.match(await totals(set), { succeeded: 100 });
  await disable(set);
});

t.test("counts written together with a deleted function's are still stored", async (t) => {
  const set = await create({ template_id: 'template-set-properties', inputs: { properties: { value: { c: 'no' } } } });
  // A function gone with its project while its counts waited: the one statement for both fails on its row.
  await addMetrics(
    db,
    new Map([
      [randomUUID(), new Map([['succeeded', 3]])],
      [set, new Map([['succeeded', 2]])],
    ]),
  );
  t.match(await totals(set), { succeeded: 2 });
  await disable(set);
});
