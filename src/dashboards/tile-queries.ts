import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { dashboard_tiles, insights } from '../db/schema/index.js';
import { isRowId } from '../core/ids.js';
import { dashboardInProject, projectDashboardIds } from './queries.js';
import { jsonObject } from '../db/queries/json.js';

export type TileRow = typeof dashboard_tiles.$inferSelect;
export interface NewTile {
  body: string;
  /** An insight tile's insight (of the same project); absent for a text tile. */
  insight_id?: number | null;
  layouts?: Record<string, unknown> | undefined;
  color?: string | null | undefined;
  deleted?: boolean | undefined;
  created_by_id?: number | null;
  last_modified_by_id?: number | null;
}
/** A tile as a dashboard shows it: the fields its serializer reads, the time as the contract's string. */
export interface TileView {
  id: number;
  body: string;
  insight_id: number | null;
  layouts: Record<string, unknown>;
  color: string | null;
  created_by_id: number | null;
  last_modified_by_id: number | null;
  last_modified_at: string;
  /** The key an insight tile's result was last cached under (see the column); not shown. */
  cache_key: string | null;
}

/**
 * A `TileView` as one JSON object, from the tile row aliased `t` (its time as JSON writes a timestamptz, for
 * `isoTimestamp`): typed by TileView's keys, so a field the view gains or loses fails the build here rather
 * than reaching the serializer as undefined.
 */
const tileViewFields: Record<keyof TileView, SQL> = {
  id: sql.raw('t.id'),
  body: sql.raw('t.body'),
  insight_id: sql.raw('t.insight_id'),
  layouts: sql.raw('t.layouts'),
  color: sql.raw('t.color'),
  created_by_id: sql.raw('t.created_by_id'),
  last_modified_by_id: sql.raw('t.last_modified_by_id'),
  last_modified_at: sql.raw('t.last_modified_at'),
  cache_key: sql.raw('t.cache_key'),
};
export const tileViewJson = jsonObject(tileViewFields);

export type TileChange = Partial<Pick<TileRow, 'body' | 'layouts' | 'color' | 'deleted' | 'last_modified_by_id'>>;

/** The live tiles of several dashboards, by dashboard id. */
export async function liveTiles(db: Db, dashboardIds: number[]): Promise<Map<number, TileRow[]>> {
  const out = new Map<number, TileRow[]>(dashboardIds.map((id) => [id, []]));
  if (!dashboardIds.length) return out;
  const rows = await db
    .select()
    .from(dashboard_tiles)
    .where(and(inArray(dashboard_tiles.dashboard_id, dashboardIds), eq(dashboard_tiles.deleted, false)))
    .orderBy(asc(dashboard_tiles.id));
  for (const row of rows) out.get(row.dashboard_id)!.push(row);
  return out;
}

/** A live tile of one dashboard. */
export async function getTile(db: Db, dashboardId: number, tileId: number): Promise<TileRow | undefined> {
  if (!isRowId(tileId)) return undefined;
  const [row] = await db
    .select()
    .from(dashboard_tiles)
    .where(
      and(
        eq(dashboard_tiles.id, tileId),
        eq(dashboard_tiles.dashboard_id, dashboardId),
        eq(dashboard_tiles.deleted, false),
      ),
    )
    .limit(1);
  return row;
}

/** Whether every id names a live insight of the project. */
async function insightsInProject(db: Db, projectId: number, ids: number[]): Promise<boolean> {
  const wanted = [...new Set(ids)];
  if (!wanted.length) return true;
  if (!wanted.every(isRowId)) return false;
  const rows = await db
    .select({ id: insights.id })
    .from(insights)
    .where(and(eq(insights.project_id, projectId), inArray(insights.id, wanted), eq(insights.deleted, false)));
  return rows.length === wanted.length;
}

/**
 * Adds tiles to a dashboard of the project; false, with nothing written, when it is not the project's or
 * a tile names an insight that is not a live insight of the project (a tile never joins two projects).
 */
export async function insertTiles(db: Db, projectId: number, dashboardId: number, tiles: NewTile[]): Promise<boolean> {
  if (!(await dashboardInProject(db, projectId, dashboardId))) return false;
  if (!tiles.length) return true;
  const insightIds = tiles.flatMap((t) => (t.insight_id ? [t.insight_id] : []));
  if (!(await insightsInProject(db, projectId, insightIds))) return false;
  await db.insert(dashboard_tiles).values(
    tiles.map((t) => ({
      dashboard_id: dashboardId,
      body: t.body,
      insight_id: t.insight_id ?? null,
      layouts: t.layouts ?? {},
      color: t.color ?? null,
      deleted: t.deleted ?? false,
      created_by_id: t.created_by_id ?? null,
      last_modified_by_id: t.last_modified_by_id ?? null,
    })),
  );
  return true;
}

export async function updateTile(
  db: Db,
  projectId: number,
  dashboardId: number,
  tileId: number,
  change: TileChange,
): Promise<void> {
  const touchesText = change.body !== undefined;
  await db
    .update(dashboard_tiles)
    .set({ ...change, ...(touchesText ? { last_modified_at: sql`now()` } : {}) })
    .where(
      and(
        eq(dashboard_tiles.id, tileId),
        eq(dashboard_tiles.dashboard_id, dashboardId),
        inArray(dashboard_tiles.dashboard_id, projectDashboardIds(projectId)),
      ),
    );
}

/** Moves a tile between two dashboards of the project; false when either end is not the project's. */
export async function moveTile(
  db: Db,
  projectId: number,
  tile: { id: number; from: number; to: number },
): Promise<boolean> {
  const rows = await db
    .update(dashboard_tiles)
    .set({ dashboard_id: tile.to })
    .where(
      and(
        eq(dashboard_tiles.id, tile.id),
        eq(dashboard_tiles.dashboard_id, tile.from),
        inArray(dashboard_tiles.dashboard_id, projectDashboardIds(projectId)),
        sql`${tile.to} in ${projectDashboardIds(projectId)}`,
      ),
    )
    .returning({ id: dashboard_tiles.id });
  return rows.length > 0;
}

/**
 * Stores the keys the insight tiles' results were cached under (by tile id), for the next plain read to
 * join the answers by; only tiles of the dashboard, in the project, are written.
 */
export async function storeTileKeys(
  db: Db,
  projectId: number,
  dashboardId: number,
  keys: { id: number; key: string }[],
): Promise<void> {
  if (!keys.length) return;
  const array = (items: (string | number)[]) => `{${items.join(',')}}`;
  await db.execute(
    sql`update ${dashboard_tiles} t set cache_key = v.key
      from unnest(${array(keys.map((k) => k.id))}::int[], ${array(keys.map((k) => k.key))}::text[]) as v(id, key)
      where t.id = v.id and t.dashboard_id = ${dashboardId} and t.dashboard_id in ${projectDashboardIds(projectId)}`,
  );
}
