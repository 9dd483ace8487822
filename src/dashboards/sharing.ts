// Who may read and change a dashboard's sharing configuration.
import { ApiError } from '../core/errors.js';
import type { ProjectTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import { requirePublicSharing } from '../sharing/config.js';
import type { SharingTarget } from '../sharing/queries.js';
import { requireEdit, type Viewer } from './access.js';
import { permissionsOn } from './present.js';
import { getDashboard } from './queries.js';

export const DASHBOARD_NOT_FOUND = 'Dashboard not found.';

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
