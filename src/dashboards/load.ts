import type { Db } from '../db/client.js';
import { getDashboard, type DashboardRow } from './queries.js';
import { ApiError } from '../core/errors.js';
import type { Viewer } from '../dashboard-access/rules.js';

/** The viewer a signed-in caller is: their user and their level in the project's organization. */
export function viewerOf(caller: { principal: { user: { id: number } }; tenant: { level: number } }): Viewer {
  return { id: caller.principal.user.id, level: caller.tenant.level };
}

/** A dashboard of the project; any other id, or a deleted one unless asked for, is a 404. */
export async function loadDashboard(
  db: Db,
  projectId: number,
  id: number,
  opts: { includeDeleted?: boolean; notFound?: string } = {},
): Promise<DashboardRow> {
  const row = await getDashboard(db, projectId, id, opts);
  if (!row) throw ApiError.notFound(opts.notFound);
  return row;
}
