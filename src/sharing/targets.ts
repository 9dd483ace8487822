// Who may read and change the sharing configuration of a dashboard or an insight (PostHog's
// check_can_edit_sharing_configuration): the object is the project's, and a write needs edit rights on it.
import { ApiError } from '../core/errors.js';
import type { ProjectTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import { requireEdit, type Viewer } from '../dashboard-access/rules.js';
import { permissionsOn } from '../dashboards/present.js';
import { getDashboard } from '../dashboards/queries.js';
import { insightPermissions } from '../insights/present.js';
import { getInsight, insightTiles } from '../insights/queries.js';
import { requirePublicSharing } from './config.js';
import type { SharingTarget } from './queries.js';

const DASHBOARD_NOT_FOUND = 'Dashboard not found.';
const INSIGHT_NOT_FOUND = 'Insight not found.';

/** A dashboard of the project whose sharing the viewer may read; any other id is a 404. */
export async function dashboardSharing(db: Db, projectId: number, id: number): Promise<SharingTarget> {
  const row = await getDashboard(db, projectId, id);
  if (!row) throw ApiError.notFound(DASHBOARD_NOT_FOUND);
  return { kind: 'dashboard', id: row.id };
}

/**
 * PostHog's check_can_edit_sharing_configuration for a dashboard: a write that enables sharing is
 * refused while the organization forbids publicly shared resources; then the viewer needs edit rights.
 */
export async function dashboardSharingToEdit(
  db: Db,
  tenant: ProjectTenant,
  viewer: Viewer,
  dashboardId: number,
  enabling: unknown,
): Promise<SharingTarget> {
  const row = await getDashboard(db, tenant.project_id, dashboardId);
  if (!row) throw ApiError.notFound(DASHBOARD_NOT_FOUND);
  await requirePublicSharing(db, tenant.organization_id, enabling);
  requireEdit(await permissionsOn(db, row, viewer));
  return { kind: 'dashboard', id: row.id };
}

/** An insight of the project whose sharing the viewer may read; any other id is a 404. */
export async function insightSharing(db: Db, projectId: number, id: number): Promise<SharingTarget> {
  const row = await getInsight(db, projectId, id);
  if (!row) throw ApiError.notFound(INSIGHT_NOT_FOUND);
  return { kind: 'insight', id: row.id };
}

/**
 * PostHog's check_can_edit_sharing_configuration for an insight: enabling needs the organization to
 * allow publicly shared resources, and any write needs edit rights on the insight (on a dashboard
 * restricted to collaborators, those of one such dashboard).
 */
export async function insightSharingToEdit(
  db: Db,
  tenant: ProjectTenant,
  viewer: Viewer,
  insightId: number,
  enabling: unknown,
): Promise<SharingTarget> {
  const row = await getInsight(db, tenant.project_id, insightId);
  if (!row) throw ApiError.notFound(INSIGHT_NOT_FOUND);
  await requirePublicSharing(db, tenant.organization_id, enabling);
  const tiles = (await insightTiles(db, [row])).get(row.id) ?? [];
  if ((await insightPermissions(db, row, tiles, viewer)).effective_privilege_level < 37) {
    throw ApiError.permissionDenied("You don't have edit permissions for this insight.");
  }
  return { kind: 'insight', id: row.id };
}
