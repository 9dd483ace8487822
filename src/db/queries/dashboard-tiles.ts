import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { dashboard_tiles } from '../schema/index.js';
import { isRowId } from './dashboards.js';

export type TileRow = typeof dashboard_tiles.$inferSelect;
export interface NewTile {
  body: string;
  layouts?: Record<string, unknown> | undefined;
  color?: string | null | undefined;
  deleted?: boolean | undefined;
  created_by_id?: number | null;
  last_modified_by_id?: number | null;
}
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
    .where(and(eq(dashboard_tiles.id, tileId), eq(dashboard_tiles.dashboard_id, dashboardId), eq(dashboard_tiles.deleted, false)))
    .limit(1);
  return row;
}

export async function insertTiles(db: Db, dashboardId: number, tiles: NewTile[]): Promise<void> {
  if (!tiles.length) return;
  await db.insert(dashboard_tiles).values(
    tiles.map((t) => ({
      dashboard_id: dashboardId,
      body: t.body,
      layouts: t.layouts ?? {},
      color: t.color ?? null,
      deleted: t.deleted ?? false,
      created_by_id: t.created_by_id ?? null,
      last_modified_by_id: t.last_modified_by_id ?? null,
    })),
  );
}

export async function updateTile(db: Db, dashboardId: number, tileId: number, change: TileChange): Promise<void> {
  const touchesText = change.body !== undefined;
  await db
    .update(dashboard_tiles)
    .set({ ...change, ...(touchesText ? { last_modified_at: sql`now()` } : {}) })
    .where(and(eq(dashboard_tiles.id, tileId), eq(dashboard_tiles.dashboard_id, dashboardId)));
}

/** Copies the live tiles of one dashboard onto another (duplicating a dashboard). */
export async function copyTiles(db: Db, fromDashboardId: number, toDashboardId: number): Promise<void> {
  const tiles = (await liveTiles(db, [fromDashboardId])).get(fromDashboardId)!;
  await insertTiles(db, toDashboardId, tiles);
}

export async function moveTile(db: Db, tileId: number, toDashboardId: number): Promise<void> {
  await db.update(dashboard_tiles).set({ dashboard_id: toDashboardId }).where(eq(dashboard_tiles.id, tileId));
}
