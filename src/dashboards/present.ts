import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import { dashboardExtras, type DashboardRow } from '../db/queries/dashboards.js';
import { liveTiles } from '../db/queries/dashboard-tiles.js';
import { getUsers } from '../db/queries/users.js';
import { serializeDashboard, serializeDashboardBasic } from '../serializers/dashboards.js';
import { dashboardPermissions, SHARED_VIEW, type DashboardPermissions, type Viewer } from './access.js';

type Schemas = components['schemas'];

/** A signed-in viewer, or the anonymous reader of a shared link. */
export type Audience = Viewer | 'shared';

/** The viewer's permissions on one dashboard (one query for their collaborator level). */
export async function permissionsOn(db: Db, dashboard: DashboardRow, viewer: Viewer): Promise<DashboardPermissions> {
  const extras = await dashboardExtras(db, [dashboard.id], viewer.id);
  return dashboardPermissions(dashboard, viewer, extras.get(dashboard.id)!.privilege);
}

export async function presentDashboards(
  db: Db,
  rows: DashboardRow[],
  audience: Audience,
): Promise<Schemas['DashboardBasic'][]> {
  const ids = rows.map((d) => d.id);
  const [extras, users] = await Promise.all([
    dashboardExtras(db, ids, audience === 'shared' ? null : audience.id),
    getUsers(
      db,
      rows.flatMap((d) => (d.created_by_id === null ? [] : [d.created_by_id])),
    ),
  ]);
  return rows.map((d) => {
    const { is_shared, privilege } = extras.get(d.id)!;
    const permissions = audience === 'shared' ? SHARED_VIEW : dashboardPermissions(d, audience, privilege);
    return serializeDashboardBasic(d, { is_shared, permissions, users });
  });
}

/** The full dashboard, with its live tiles, as `audience` sees it. */
export async function presentDashboard(db: Db, d: DashboardRow, audience: Audience): Promise<Schemas['Dashboard']> {
  const [extras, tiles] = await Promise.all([
    dashboardExtras(db, [d.id], audience === 'shared' ? null : audience.id),
    liveTiles(db, [d.id]),
  ]);
  const dashboardTiles = tiles.get(d.id)!;
  const userIds = [d.created_by_id, ...dashboardTiles.flatMap((t) => [t.created_by_id, t.last_modified_by_id])];
  const users = await getUsers(
    db,
    userIds.filter((id): id is number => id !== null),
  );
  const { is_shared, privilege } = extras.get(d.id)!;
  const permissions = audience === 'shared' ? SHARED_VIEW : dashboardPermissions(d, audience, privilege);
  return serializeDashboard(d, { is_shared, permissions, users }, dashboardTiles);
}
