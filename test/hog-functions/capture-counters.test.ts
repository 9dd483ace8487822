// Through capture: the drop template's counters, and the counters of many concurrent requests (written
// together, one statement at a time) adding up to every event.
import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { TEMPLATES } from '../../src/hog-functions/templates/index.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const P = { project_id: a.project.id };

async function capture(events: { event: string; properties?: Record<string, unknown> }[]) {
  const res = await ctx.inject({
    method: 'POST',
    url: '/batch/',
    payload: { api_key: a.project.api_token, batch: events.map((e) => ({ distinct_id: 'u1', properties: {}, ...e })) },
  });
  if (res.statusCode !== 200) throw new Error(`capture answered ${res.statusCode}: ${res.body}`);
}

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

const create = async (body: Record<string, unknown>) => {
  const res = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: { type: 'transformation', enabled: true, ...body },
  });
  if (res.status !== 201) throw new Error(res.raw);
  return res.body.id as string;
};
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
