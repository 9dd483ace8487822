// A plain dashboard read (the cache only) in one statement: each insight tile stores the key its result was
// cached under, and the read serves the answer joined by it only when the key is the one the tile's query
// gives now. Its answer is the general path's; a changed context, or another project's key, serves nothing old.
import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildTestApp, json } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { trendsQuery } from './helpers.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const at = (s: string) => new Date(`${s}Z`);
// Project a: May 1 two pageviews (Chrome, Firefox), May 2 one (Chrome). Project b: one on May 3.
await insertEvents(db, a.project.id, [
  { event: '$pageview', timestamp: at('2024-05-01T10:00:00'), properties: { $browser: 'Chrome' } },
  { event: '$pageview', timestamp: at('2024-05-01T11:00:00'), properties: { $browser: 'Firefox' } },
  { event: '$pageview', timestamp: at('2024-05-02T09:00:00'), properties: { $browser: 'Chrome' } },
]);
await insertEvents(db, b.project.id, [{ event: '$pageview', timestamp: at('2024-05-03T09:00:00') }]);

type Tenant = typeof a;
type Tile = { id: number; insight: Record<string, any> | null; text: unknown };
const hogql = { kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query: 'select count() from events' } };

/** A dashboard of the tenant with a text tile, a trends insight and a HogQL insight. */
async function dashboardOf(tenant: Tenant, filters: Record<string, unknown> = {}) {
  const params = { project_id: tenant.project.id };
  const d = json<'dashboards_create'>(
    await call('dashboards_create', { key: tenant.key, params, body: { name: 'Cached', filters } }),
  );
  for (const [name, query] of [
    ['Views', trendsQuery()],
    ['Count', hogql],
  ] as const) {
    await call('insights_create', {
      key: tenant.key,
      params,
      body: { name, query: query as never, dashboards: [d.id] },
    });
  }
  await call('dashboards_partial_update', {
    key: tenant.key,
    params: { ...params, id: d.id },
    body: { tiles: [{ text: { body: 'Notes' } }] },
  });
  return d.id;
}

const read = async (tenant: Tenant, id: number, query: Record<string, string> = {}) => {
  const res = await call('dashboards_retrieve', {
    key: tenant.key,
    params: { project_id: tenant.project.id, id },
    query,
  });
  t.equal(res.status, 200, res.raw.slice(0, 200));
  return res;
};
const insights = (body: { tiles: unknown[] }) =>
  (body.tiles as Tile[]).flatMap((tile) => (tile.insight ? [tile.insight] : []));
const views = (body: { tiles: unknown[] }) =>
  (insights(body).find((i) => i.name === 'Views')!.result as { data: number[] }[] | null)?.[0]?.data ?? null;
const storedKeys = async (id: number) =>
  (
    (await db.execute(
      sql`select cache_key from dashboard_tiles where dashboard_id = ${id} and insight_id is not null order by id`,
    )) as unknown as { cache_key: string | null }[]
  ).map((r) => r.cache_key);
// The one-statement read writes each tile's insight after its other fields; the general path in the contract's order.
const oneStatement = (raw: string) => raw.includes('"order":1,"insight":{');

t.test("a plain read serves the tiles' cached answers in one statement, as the general path does", async (t) => {
  const id = await dashboardOf(a);
  const cold = await read(a, id);
  t.same(views(cold.body), null, 'nothing cached yet');
  t.same(
    await storedKeys(id),
    insights(cold.body).map((i) => i.cache_key),
    'a miss stores the keys too',
  );
  t.ok(oneStatement((await read(a, id)).raw), 'the keys hold: one statement, misses and all');

  const computed = await read(a, id, { refresh: 'blocking' });
  t.same(views(computed.body), [2, 1, 0]);
  const fast = await read(a, id);
  t.ok(oneStatement(fast.raw));
  t.same(views(fast.body), [2, 1, 0]);
  t.ok(insights(fast.body).every((i) => i.is_cached));

  await db.execute(sql`update dashboard_tiles set cache_key = null where dashboard_id = ${id}`);
  const general = await read(a, id);
  t.notOk(oneStatement(general.raw), 'no stored key: the general path');
  t.same(fast.body, general.body, 'the same answer');
  t.same(
    await storedKeys(id),
    insights(general.body).map((i) => i.cache_key),
    'which stores the keys again',
  );
  t.ok(oneStatement((await read(a, id)).raw));
});

t.test("a tile whose stored key is not its query's key now does not serve the old answer", async (t) => {
  const id = await dashboardOf(a);
  await read(a, id, { refresh: 'blocking' });
  const before = await storedKeys(id);
  const chrome = { properties: [{ key: '$browser', value: 'Chrome', type: 'event' }] };
  await call('dashboards_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id },
    body: { filters: chrome },
  });
  const changed = await read(a, id);
  t.notOk(oneStatement(changed.raw));
  t.same(views(changed.body), null, 'the answer without the filter is not served under them');
  t.notSame(await storedKeys(id), before, 'the keys under the new filters are stored');
  t.same(views((await read(a, id, { refresh: 'blocking' })).body), [1, 1, 0]);
  const cached = await read(a, id);
  t.ok(oneStatement(cached.raw));
  t.same(views(cached.body), [1, 1, 0]);

  const override = await read(a, id, { filters_override: JSON.stringify({}) });
  t.notOk(oneStatement(override.raw), "a read's overrides are not the stored context");
  t.same(views(override.body), [2, 1, 0], 'the answer cached without filters, under its own key');
  t.ok(oneStatement((await read(a, id)).raw), "an override's keys are not stored");
});

t.test("two projects with the same queries never see each other's answers", async (t) => {
  const ida = await dashboardOf(a);
  const idb = await dashboardOf(b);
  await read(a, ida, { refresh: 'blocking' });
  t.same(views((await read(b, idb)).body), null, "b's tiles have nothing cached");
  await read(b, idb, { refresh: 'blocking' });
  const [fa, fb] = [await read(a, ida), await read(b, idb)];
  t.ok(oneStatement(fa.raw) && oneStatement(fb.raw));
  t.same(views(fa.body), [2, 1, 0]);
  t.same(views(fb.body), [0, 0, 1]);
  t.notSame(await storedKeys(ida), await storedKeys(idb), 'the project is part of the key');

  // b's tiles made to name a's answers: b's read checks them against its own queries' keys.
  await db.execute(sql`update dashboard_tiles tb set cache_key = ta.cache_key
    from dashboard_tiles ta join insights ia on ia.id = ta.insight_id, insights ib
    where tb.dashboard_id = ${idb} and ta.dashboard_id = ${ida} and ib.id = tb.insight_id and ib.name = ia.name`);
  t.same(await storedKeys(idb), await storedKeys(ida));
  const crossed = await read(b, idb);
  t.notOk(oneStatement(crossed.raw));
  t.same(views(crossed.body), [0, 0, 1], "b's own answer");
  t.same(crossed.body, fb.body, 'as before');
});

t.test('a read presented before is answered again only while the rows it was made of are as they were', async (t) => {
  const id = await dashboardOf(a);
  await read(a, id, { refresh: 'blocking' });
  const first = await read(a, id);
  t.equal((await read(a, id)).raw, first.raw, 'nothing changed');

  const views0 = insights(first.body).find((i) => i.name === 'Views')!;
  await call('insights_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: views0.id },
    body: { name: 'Renamed', description: 'after' },
  });
  const renamed = insights((await read(a, id)).body).find((i) => i.id === views0.id)!;
  t.match(renamed, { name: 'Renamed', description: 'after' }, 'an insight changed');

  await read(a, id, { refresh: 'force_blocking' });
  const recomputed = insights((await read(a, id)).body).find((i) => i.id === views0.id)!;
  t.not(recomputed.last_refresh, renamed.last_refresh, 'an answer computed again');

  await db.execute(sql`update users set first_name = 'Changed' where id = ${a.user.id}`);
  const user = await read(a, id);
  t.equal(user.body.created_by?.first_name, 'Changed', 'a user changed');
  t.equal(insights(user.body)[0]!.created_by.first_name, 'Changed');

  await db.execute(sql`update query_cache set expires_at = now() where project_id = ${a.project.id}`);
  const expired = await read(a, id);
  t.ok(
    insights(expired.body).every((i) => !i.is_cached && i.result === null),
    'an answer expired',
  );
});

t.test('a read presented before changes with the other dashboards that place its insights', async (t) => {
  const id = await dashboardOf(a);
  const other = await dashboardOf(a);
  await read(a, id, { refresh: 'blocking' });
  const first = await read(a, id);
  t.equal((await read(a, id)).raw, first.raw, 'nothing changed');
  const views = insights(first.body).find((i) => i.name === 'Views')!;
  t.same(views.dashboards, [id]);

  // Only a row of the other dashboard changes: a tile placing the insight there.
  await db.execute(sql`insert into dashboard_tiles (dashboard_id, insight_id) values (${other}, ${views.id})`);
  const placed = insights((await read(a, id)).body).find((i) => i.id === views.id)!;
  t.same(placed.dashboards, [id, other], 'placed on another dashboard');
  t.equal(placed.dashboard_tiles.length, 2);

  await db.execute(sql`update dashboards set deleted = true where id = ${other}`);
  const gone = insights((await read(a, id)).body).find((i) => i.id === views.id)!;
  t.same(gone.dashboards, [id], 'the other dashboard deleted');
});
