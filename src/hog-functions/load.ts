import { ApiError } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import type { Db } from '../db/client.js';
import type { ProjectTenant as ProjectScope } from '../core/tenant.js';
import { getHogFunction, type HogFunctionView } from './queries.js';

/** The function a path names in the project, or a 404 (another project's id included). */
export async function loadHogFunction(
  db: Db,
  scope: ProjectScope,
  id: string,
  withDeleted = false,
): Promise<HogFunctionView> {
  const found = isUuid(id) ? await getHogFunction(db, scope.project_id, id, withDeleted) : undefined;
  if (!found) throw ApiError.notFound();
  return found;
}
