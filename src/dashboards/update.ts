import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
import { deleteInsightsOnlyOn } from '../insights/queries.js';
import { requireEdit, requireRestrict, type Viewer } from '../dashboard-access/rules.js';
import { permissionsOn, presentDashboard, type TileResults } from './present.js';
import { getDashboard, updateDashboard, type DashboardInput, type DashboardRow } from './queries.js';
import { getTile, insertTiles, moveTile, updateTile } from './tile-queries.js';
import { duplicableTiles, duplicateTilesInPlace, type TileDuplicate } from './duplicate.js';

type TileRequest = components['schemas']['DashboardTileRequest'];

const notOnDashboard = (attr: string, id: number) =>
  ApiError.validation(attr, `Tile ${id} is not on this dashboard.`, 'not_found');

/** Validates every tile change before anything is written, so a bad tile leaves the dashboard untouched. */
async function checkTiles(
  db: Db,
  projectId: number,
  dashboardId: number,
  tiles: TileRequest[],
  duplicates: TileDuplicate[],
): Promise<void> {
  for (const [i, tile] of tiles.entries()) {
    if (tile.id === undefined) {
      if (!tile.text) throw ApiError.required(`tiles__${i}__text`);
    } else if (!(await getTile(db, dashboardId, tile.id))) {
      throw notOnDashboard(`tiles__${i}__id`, tile.id);
    }
  }
  if (!duplicates.length) return;
  const duplicable = await duplicableTiles(db, projectId, dashboardId);
  for (const [i, d] of duplicates.entries()) {
    if (!duplicable.has(d.id)) throw notOnDashboard(`duplicate_tiles__${i}__id`, d.id);
  }
}

async function applyTiles(
  db: Db,
  projectId: number,
  dashboardId: number,
  tiles: TileRequest[],
  userId: number,
): Promise<void> {
  for (const tile of tiles) {
    if (tile.id === undefined) {
      const added = await insertTiles(db, projectId, dashboardId, [
        {
          body: tile.text!.body,
          layouts: tile.layouts,
          color: tile.color,
          deleted: tile.deleted,
          created_by_id: userId,
        },
      ]);
      if (!added) throw ApiError.notFound();
      continue;
    }
    await updateTile(db, projectId, dashboardId, tile.id, {
      ...(tile.text ? { body: tile.text.body, last_modified_by_id: userId } : {}),
      ...pick(tile, ['layouts', 'color', 'deleted'] as const),
    });
  }
}

export interface DashboardChange {
  input: DashboardInput;
  tiles: TileRequest[];
  /** PostHog's `duplicate_tiles`: tiles of the dashboard to deep-copy onto it, after the tile changes. */
  duplicateTiles: TileDuplicate[];
  /** The body changes `restriction_level`, which needs restriction rights. */
  restricting: boolean;
  /** PostHog's `delete_insights` on a delete: the insights on no other dashboard go with it. */
  deleteInsights: boolean;
  results: TileResults;
}

/**
 * A dashboard update (PATCH and PUT): rights checked, every tile change checked before anything is
 * written, then the dashboard, its tiles, the duplicated tiles and (on a delete with `delete_insights`)
 * its own insights written in one transaction, and the answer read in it.
 */
export async function changeDashboard(
  db: Db,
  dashboard: DashboardRow,
  viewer: Viewer,
  change: DashboardChange,
): Promise<components['schemas']['Dashboard']> {
  const permissions = await permissionsOn(db, dashboard, viewer);
  requireEdit(permissions);
  if (change.restricting) requireRestrict(permissions);
  await checkTiles(db, dashboard.project_id, dashboard.id, change.tiles, change.duplicateTiles);
  const projectId = dashboard.project_id;
  return db.transaction(async (tx) => {
    const row = await updateDashboard(tx, projectId, dashboard.id, change.input);
    if (!row) throw ApiError.notFound();
    await applyTiles(tx, projectId, dashboard.id, change.tiles, viewer.id);
    // A tile this body removes (or one removed meanwhile) can no longer be duplicated.
    if (!(await duplicateTilesInPlace(tx, projectId, dashboard.id, change.duplicateTiles, viewer.id))) {
      throw ApiError.validation('duplicate_tiles', 'A tile to duplicate is no longer on this dashboard.', 'not_found');
    }
    if (change.deleteInsights) await deleteInsightsOnlyOn(tx, projectId, dashboard.id);
    return presentDashboard(tx, row, viewer, change.results);
  });
}

/**
 * Moves a tile of `from` onto another dashboard of the project (PostHog's `move_tile`): edit rights on
 * both; answers the source dashboard without it, read in the transaction that moved it.
 */
export async function moveDashboardTile(
  db: Db,
  from: DashboardRow,
  viewer: Viewer,
  tileId: number,
  toId: number,
): Promise<components['schemas']['Dashboard']> {
  requireEdit(await permissionsOn(db, from, viewer));
  const tile = await getTile(db, from.id, tileId);
  if (!tile) throw ApiError.notFound();
  const to = await getDashboard(db, from.project_id, toId);
  if (!to) throw ApiError.notFound();
  requireEdit(await permissionsOn(db, to, viewer), "You don't have edit permissions for the destination dashboard.");
  return db.transaction(async (tx) => {
    const moved = await moveTile(tx, from.project_id, { id: tile.id, from: from.id, to: to.id });
    if (!moved) throw ApiError.notFound();
    return presentDashboard(tx, from, viewer);
  });
}
