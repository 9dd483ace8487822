import type { Db } from '../db/client.js';
import { getInsights, insertInsight, type InsightRow } from '../insights/queries.js';
import { dashboardInProject } from './queries.js';
import { insertTiles, liveTiles, type NewTile, type TileRow } from './tile-queries.js';

/** PostHog's _deep_duplicate_tiles for an insight: a new insight of the project named "<name> (Copy)". */
async function copyInsight(db: Db, projectId: number, insight: InsightRow, userId: number): Promise<number> {
  const copy = await insertInsight(db, projectId, {
    name: insight.name ? `${insight.name} (Copy)` : null,
    derived_name: insight.derived_name,
    description: insight.description,
    query: insight.query,
    filters: insight.filters,
    order: insight.order,
    saved: insight.saved,
    favorited: insight.favorited,
    tags: insight.tags,
    created_by_id: userId,
    last_modified_by_id: userId,
  });
  return copy.id;
}

/**
 * The copy of a tile, with its layouts and colour: its insight shared, or with `deep` copied first; a
 * text tile's text either way. Undefined for a tile of a deleted insight, which is neither shown nor copied.
 */
async function tileCopy(
  db: Db,
  projectId: number,
  tile: TileRow,
  insights: Map<number, InsightRow>,
  opts: { deep: boolean; userId: number },
): Promise<NewTile | undefined> {
  const kept = {
    body: tile.body,
    layouts: tile.layouts,
    color: tile.color,
    created_by_id: tile.created_by_id,
    last_modified_by_id: tile.last_modified_by_id,
  };
  if (tile.insight_id === null) return kept;
  const insight = insights.get(tile.insight_id);
  if (!insight) return undefined;
  return { ...kept, insight_id: opts.deep ? await copyInsight(db, projectId, insight, opts.userId) : insight.id };
}

const insightsOf = (db: Db, projectId: number, tiles: TileRow[]) =>
  getInsights(
    db,
    projectId,
    tiles.flatMap((t) => (t.insight_id === null ? [] : [t.insight_id])),
  );

/**
 * PostHog's dashboard duplication (`use_dashboard`): each live tile of the source is copied onto the new
 * dashboard with its layouts and colour. Its insight is shared, or with `deep` (PostHog's
 * `duplicate_tiles: true`) copied first as a new insight of the project named "<name> (Copy)", as
 * PostHog's _deep_duplicate_tiles does; text tiles are copied either way. False when the source is not
 * a dashboard of the project.
 */
export async function duplicateTiles(
  db: Db,
  projectId: number,
  from: number,
  to: number,
  opts: { deep: boolean; userId: number },
): Promise<boolean> {
  if (!(await dashboardInProject(db, projectId, from))) return false;
  const tiles = (await liveTiles(db, [from])).get(from)!;
  const insights = await insightsOf(db, projectId, tiles);
  const copies: NewTile[] = [];
  for (const tile of tiles) {
    const copy = await tileCopy(db, projectId, tile, insights, opts);
    if (copy) copies.push(copy);
  }
  return insertTiles(db, projectId, to, copies);
}

export interface TileDuplicate {
  id: number;
  layouts?: Record<string, unknown> | undefined;
}

/**
 * The live tiles of a dashboard that a PATCH's `duplicate_tiles` may name, by id: text tiles and tiles
 * of live insights.
 */
export async function duplicableTiles(db: Db, projectId: number, dashboardId: number): Promise<Set<number>> {
  const tiles = (await liveTiles(db, [dashboardId])).get(dashboardId)!;
  const insights = await insightsOf(db, projectId, tiles);
  return new Set(tiles.filter((t) => t.insight_id === null || insights.has(t.insight_id)).map((t) => t.id));
}

/**
 * PostHog's `duplicate_tiles` on a dashboard update: each named tile of the dashboard is deep-copied
 * onto it (PostHog's _deep_duplicate_tiles), the copy taking the request's `layouts` ({} when omitted).
 */
export async function duplicateTilesInPlace(
  db: Db,
  projectId: number,
  dashboardId: number,
  requests: TileDuplicate[],
  userId: number,
): Promise<boolean> {
  if (!requests.length) return true;
  const tiles = new Map((await liveTiles(db, [dashboardId])).get(dashboardId)!.map((t) => [t.id, t]));
  const insights = await insightsOf(db, projectId, [...tiles.values()]);
  const copies: NewTile[] = [];
  for (const request of requests) {
    const tile = tiles.get(request.id);
    const copy = tile && (await tileCopy(db, projectId, tile, insights, { deep: true, userId }));
    if (!copy) return false;
    copies.push({ ...copy, layouts: request.layouts ?? {} });
  }
  return insertTiles(db, projectId, dashboardId, copies);
}
