// Who may read and change an insight's sharing configuration.
import { ApiError } from '../core/errors.js';
import type { ProjectTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import type { Viewer } from '../dashboards/access.js';
import { requirePublicSharing } from '../sharing/config.js';
import type { SharingTarget } from '../sharing/queries.js';
import { insightPermissions } from './present.js';
import { getInsight, insightTiles } from './queries.js';

const INSIGHT_NOT_FOUND = 'Insight not found.';

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
  const tiles = (await insightTiles(db, [row.id])).get(row.id) ?? [];
  if ((await insightPermissions(db, row, tiles, viewer)).effective_privilege_level < 37) {
    throw ApiError.permissionDenied("You don't have edit permissions for this insight.");
  }
  return { kind: 'insight', id: row.id };
}
