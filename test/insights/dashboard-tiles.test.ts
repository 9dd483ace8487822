// Insight tiles on dashboards: the retrieve shows each with its insight and result (per refresh, with the
// dashboard's filters or the read's overrides), layouts and colours, move_tile, duplication, and
// delete_insights. Counts are worked out by hand from the events below.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { checkPosthogInsight, trendsQuery } from './helpers.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const params = { project_id: a.project.id };
const at = (s: string) => new Date(`${s}Z`);
// May 1: two pageviews (Chrome, Firefox); May 2: one (Chrome); May 3: none.
await insertEvents(db, a.project.id, [
  { event: '$pageview', timestamp: at('2024-05-01T10:00:00'), properties: { $browser: 'Chrome' } },
  { event: '$pageview', timestamp: at('2024-05-01T11:00:00'), properties: { $browser: 'Firefox' } },
  { event: '$pageview', timestamp: at('2024-05-02T09:00:00'), properties: { $browser: 'Chrome' } },
]);

const dashboard = async (body: Record<string, unknown> = {}) =>
  json<'dashboards_create'>(await call('dashboards_create', { key: a.key, params, body: { name: 'Tiles', ...body } }));
const insightOn = async (dashboards: number[], name = 'Views') =>
  json<'insights_create'>(
    await call('insights_create', { key: a.key, params, body: { name, query: trendsQuery() as never, dashboards } }),
  );
const retrieve = async (id: number, query: Record<string, string> = {}) => {
  const res = await call('dashboards_retrieve', { key: a.key, params: { ...params, id }, query });
  t.equal(res.status, 200, res.raw.slice(0, 200));
  return res.body;
};
type Tile = { insight: Record<string, any> | null; text: unknown; id: number; layouts: unknown; color: unknown };
const insightTile = (d: { tiles: unknown[] }) => (d.tiles as Tile[]).find((x) => x.insight)!;
const data = (tile: Tile) => (tile.insight!.result as { data: number[] }[] | null)?.[0]?.data ?? null;

t.test('a dashboard shows its insight tiles, with results per refresh', async (t) => {
  const d = await dashboard();
  const insight = await insightOn([d.id]);
  const cold = await retrieve(d.id);
  t.equal(cold.tiles.length, 1);
  const tile = insightTile(cold);
  t.equal(tile.text, null);
  t.equal(tile.insight!.id, insight.id);
  t.equal(tile.insight!.result, null, 'a plain read serves the cache only');
  checkPosthogInsight(t, tile.insight!);
  t.same(data(insightTile(await retrieve(d.id, { refresh: 'blocking' }))), [2, 1, 0]);
  const cached = insightTile(await retrieve(d.id));
  t.same(data(cached), [2, 1, 0]);
  t.equal(cached.insight!.is_cached, true);
});

t.test("the dashboard's filters, and the read's overrides, apply to its insights", async (t) => {
  const d = await dashboard({ filters: { properties: [{ key: '$browser', value: 'Chrome', type: 'event' }] } });
  await insightOn([d.id]);
  const filtered = insightTile(await retrieve(d.id, { refresh: 'blocking' }));
  t.same(data(filtered), [1, 1, 0], 'Chrome only');
  t.same(filtered.insight!.query.source.properties, [{ key: '$browser', value: 'Chrome', type: 'event' }]);
  const override = JSON.stringify({ date_from: '2024-05-02', date_to: '2024-05-03' });
  const over = insightTile(await retrieve(d.id, { refresh: 'blocking', filters_override: override }));
  t.same(data(over), [1, 0], "May 2 and 3 only, without the dashboard's properties");
  const bad = await call('dashboards_retrieve', {
    key: a.key,
    params: { ...params, id: d.id },
    query: { filters_override: '{' },
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.attr, 'filters_override');
});

t.test('layouts and colours, move_tile and duplication', async (t) => {
  const d = await dashboard();
  const to = await dashboard({ name: 'To' });
  const insight = await insightOn([d.id]);
  const tileId = insightTile(await retrieve(d.id)).id;
  const layouts = { sm: { x: 0, y: 0, w: 6, h: 5 } };
  const changed = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { tiles: [{ id: tileId, layouts, color: 'blue' }] },
  });
  t.equal(changed.status, 200);
  t.same(insightTile(changed.body).layouts, layouts);
  t.equal(insightTile(changed.body).color, 'blue');
  const copy = await dashboard({ name: 'Copy', use_dashboard: d.id });
  const copied = insightTile(await retrieve(copy.id));
  t.equal(copied.insight!.id, insight.id, 'a duplicate shares the insight (duplicate_tiles off)');
  const moved = await call('dashboards_move_tile_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { tile: { id: tileId }, toDashboard: to.id },
  });
  t.equal(moved.status, 200);
  t.equal(moved.body.tiles.length, 0);
  t.equal(insightTile(await retrieve(to.id)).insight!.id, insight.id);
  const got = json<'insights_retrieve'>(
    await call('insights_retrieve', { key: a.key, params: { ...params, id: insight.id } }),
  );
  t.same(got.dashboards.sort(), [copy.id, to.id].sort());
});

t.test('delete_insights deletes the insights on no other dashboard', async (t) => {
  const d = await dashboard();
  const other = await dashboard({ name: 'Other' });
  const only = await insightOn([d.id], 'only here');
  const shared = await insightOn([d.id, other.id], 'shared');
  const del = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { deleted: true, delete_insights: true },
  });
  t.equal(del.status, 200);
  t.equal((await call('insights_retrieve', { key: a.key, params: { ...params, id: only.id } })).status, 404);
  const kept = await call('insights_retrieve', { key: a.key, params: { ...params, id: shared.id } });
  t.equal(kept.status, 200);
  t.same(kept.body.dashboards, [other.id]);
});

t.test("another project's dashboard never shows this project's insight", async (t) => {
  const theirs = json<'dashboards_create'>(
    await call('dashboards_create', { key: b.key, params: { project_id: b.project.id }, body: { name: 'B' } }),
  );
  const res = await call('insights_create', {
    key: a.key,
    params,
    body: { name: 'x', query: trendsQuery() as never, dashboards: [theirs.id] },
  });
  t.equal(res.status, 400);
  const bd = await call('dashboards_retrieve', { key: b.key, params: { project_id: b.project.id, id: theirs.id } });
  t.same(bd.body.tiles, []);
});
