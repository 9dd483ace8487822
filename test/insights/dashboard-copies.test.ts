// Dashboards that bring insights with them: use_dashboard shares or (duplicate_tiles) copies its source's
// insights as PostHog does, create_from_template_json refuses INSIGHT tiles (DECISIONS.md), and no
// tile ever names an insight of another project.
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
// May 1: two pageviews, May 2: one.
await insertEvents(db, a.project.id, [
  { event: '$pageview', timestamp: at('2024-05-01T10:00:00') },
  { event: '$pageview', timestamp: at('2024-05-01T11:00:00') },
  { event: '$pageview', timestamp: at('2024-05-02T09:00:00') },
]);

const dashboard = async (body: Record<string, unknown> = {}) => {
  const res = await call('dashboards_create', { key: a.key, params, body: { name: 'Source', ...body } });
  return json<'dashboards_create'>(res);
};
type Tile = { id: number; insight: Record<string, any> | null; text: { body: string } | null; layouts: unknown };
const tilesOf = async (id: number, refresh?: string) => {
  const res = await call('dashboards_retrieve', {
    key: a.key,
    params: { ...params, id },
    query: refresh ? { refresh } : {},
  });
  t.equal(res.status, 200);
  return res.body.tiles as unknown as Tile[];
};
const insightCount = async () =>
  json<'insights_list'>(await call('insights_list', { key: a.key, params, query: { basic: true } })).count;

async function source() {
  const d = await dashboard();
  const insight = json<'insights_create'>(
    await call('insights_create', {
      key: a.key,
      params,
      body: { name: 'Views', description: 'Daily', tags: ['web'], query: trendsQuery() as never, dashboards: [d.id] },
    }),
  );
  const tiles = await tilesOf(d.id);
  const layouts = { sm: { x: 0, y: 0, w: 6, h: 5 } };
  await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { tiles: [{ id: tiles[0]!.id, layouts, color: 'blue' }, { text: { body: 'Notes' } }] as never },
  });
  return { d, insight, layouts };
}

t.test('use_dashboard shares the insights; with duplicate_tiles it copies them', async (t) => {
  const { d, insight, layouts } = await source();
  const before = await insightCount();
  const shared = await dashboard({ name: 'Shared', use_dashboard: d.id });
  const sharedTiles = await tilesOf(shared.id);
  t.same(
    sharedTiles.map((x) => x.insight?.id ?? x.text?.body),
    [insight.id, 'Notes'],
    'the same insight, and the text',
  );
  t.equal(await insightCount(), before, 'no insight was made');

  const copied = await dashboard({ name: 'Copied', use_dashboard: d.id, duplicate_tiles: true });
  const copiedTiles = await tilesOf(copied.id, 'blocking');
  const tile = copiedTiles.find((x) => x.insight)!;
  t.not(tile.insight!.id, insight.id, 'a new insight');
  t.match(tile.insight, { name: 'Views (Copy)', description: 'Daily', tags: ['web'], query: trendsQuery() });
  t.same(tile.insight!.dashboards, [copied.id], 'on the new dashboard only');
  t.same(tile.layouts, layouts, 'the layouts are kept');
  t.same((tile.insight!.result as { data: number[] }[])[0]!.data, [2, 1, 0], 'it computes as the original');
  checkPosthogInsight(t, tile.insight!);
  t.equal(copiedTiles.find((x) => x.text)!.text!.body, 'Notes');
  t.equal(await insightCount(), before + 1, 'one insight was made');
  const original = await call('insights_retrieve', { key: a.key, params: { ...params, id: insight.id } });
  t.same(original.body.dashboards.sort(), [d.id, shared.id].sort(), 'the original is not on the copy');
});

t.test("another project's dashboard cannot be duplicated", async (t) => {
  const theirs = json<'dashboards_create'>(
    await call('dashboards_create', { key: b.key, params: { project_id: b.project.id }, body: { name: 'B' } }),
  );
  const res = await call('dashboards_create', {
    key: a.key,
    params,
    body: { name: 'x', use_dashboard: theirs.id, duplicate_tiles: true },
  });
  t.same([res.status, res.body.attr], [400, 'use_dashboard']);
});

t.test('create_from_template_json makes text tiles only (DECISIONS.md): an INSIGHT tile is refused', async (t) => {
  const before = await insightCount();
  const res = await call('dashboards_create_from_template_json_create', {
    key: a.key,
    params,
    body: {
      template: {
        template_name: 'Web',
        tiles: [{ type: 'TEXT', body: 'About' }, { type: 'INSIGHT', name: 'Views', query: trendsQuery() } as never],
      },
    },
  });
  t.same([res.status, res.body.attr], [400, 'template__tiles']);
  t.equal(await insightCount(), before, 'no insight made');
  const list = await call('dashboards_list', { key: a.key, params });
  t.notOk(
    list.body.results.some((d: { name: string | null }) => d.name === 'Web'),
    'no dashboard made',
  );
});

t.test('a tile never names an insight of another project', async (t) => {
  const theirs = json<'insights_create'>(
    await call('insights_create', {
      key: b.key,
      params: { project_id: b.project.id },
      body: { name: 'B', query: trendsQuery() as never },
    }),
  );
  const mine = await dashboard({ name: 'Mine' });
  const patch = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: mine.id },
    body: { tiles: [{ insight: { id: theirs.id } }] as never },
  });
  t.ok(patch.status === 200 || patch.status === 400, `a tile naming their insight: ${patch.status}`);
  t.same(await tilesOf(mine.id), [], 'no tile was made');
  const asDashboards = await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id: theirs.id },
    body: { dashboards: [mine.id] },
  });
  t.equal(asDashboards.status, 404, 'their insight is not on our path');
  const moved = await call('insights_partial_update', {
    key: b.key,
    params: { project_id: b.project.id, id: theirs.id },
    body: { dashboards: [mine.id] },
  });
  t.equal(moved.status, 400, 'nor our dashboard in their insight');
  t.same(await tilesOf(mine.id), []);
});

t.test("a PATCH's duplicate_tiles copies tiles onto the same dashboard, as PostHog's update does", async (t) => {
  const { d, insight } = await source();
  const [insightTile, textTile] = await tilesOf(d.id);
  const before = await insightCount();
  const moved = { sm: { x: 6, y: 0, w: 6, h: 5 } };
  const res = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { duplicate_tiles: [{ id: insightTile!.id, layouts: moved }, { id: textTile!.id }] },
  });
  t.equal(res.status, 200, res.raw.slice(0, 300));
  const tiles = await tilesOf(d.id, 'blocking');
  t.equal(tiles.length, 4, 'two tiles added');
  const originals = new Set([insightTile!.id, textTile!.id]);
  const insightCopy = tiles.find((x) => !originals.has(x.id) && x.insight);
  const textCopy = tiles.find((x) => !originals.has(x.id) && x.text);
  t.not(insightCopy!.insight!.id, insight.id, 'the copy shows a new insight');
  t.match(insightCopy!.insight, { name: 'Views (Copy)', description: 'Daily', query: trendsQuery() });
  t.same(insightCopy!.layouts, moved, "the request's layouts");
  t.same((insightCopy!.insight!.result as { data: number[] }[])[0]!.data, [2, 1, 0]);
  t.equal(textCopy!.text!.body, 'Notes');
  t.same(textCopy!.layouts, {}, 'no layouts given: none');
  t.equal(await insightCount(), before + 1, 'one insight made');
  t.same(tiles.find((x) => x.id === insightTile!.id)!.insight!.id, insight.id, 'the original tile is untouched');
  t.same(
    res.body.tiles.map((x) => x.id),
    tiles.map((x) => x.id),
    'the answer shows the copies',
  );

  const other = await dashboard({ name: 'Other' });
  const theirs = json<'dashboards_create'>(
    await call('dashboards_create', { key: b.key, params: { project_id: b.project.id }, body: { name: 'B' } }),
  );
  await call('dashboards_partial_update', {
    key: b.key,
    params: { project_id: b.project.id, id: theirs.id },
    body: { tiles: [{ text: { body: 'Theirs' } }] },
  });
  const theirTile = json<'dashboards_retrieve'>(
    await call('dashboards_retrieve', { key: b.key, params: { project_id: b.project.id, id: theirs.id } }),
  ).tiles[0]!;
  for (const [what, id] of [
    ["another dashboard's tile", insightTile!.id],
    ["another project's tile", theirTile.id],
  ] as const) {
    const bad = await call('dashboards_partial_update', {
      key: a.key,
      params: { ...params, id: other.id },
      body: { name: 'Renamed', duplicate_tiles: [{ id }] },
    });
    t.same([bad.status, bad.body.attr], [400, 'duplicate_tiles__0__id'], what);
  }
  t.equal(
    json<'dashboards_retrieve'>(await call('dashboards_retrieve', { key: a.key, params: { ...params, id: other.id } }))
      .name,
    'Other',
    'nothing written',
  );
  const removedToo = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    body: { tiles: [{ id: textTile!.id, deleted: true }], duplicate_tiles: [{ id: textTile!.id }] },
  });
  t.same([removedToo.status, removedToo.body.attr], [400, 'duplicate_tiles'], 'a tile the same body removes');
  t.equal((await tilesOf(d.id)).length, 4, 'and the removal was rolled back with it');
  t.equal(await insightCount(), before + 1);
});
