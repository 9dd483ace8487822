import { ApiError } from '../core/errors.js';
import { rowIdOf } from '../core/ids.js';
import type { Db } from '../db/client.js';
import { getProject, type ProjectRow } from './queries.js';

/** The project a project route names (its access already checked); a 404 once it is gone. */
export async function loadProject(db: Db, projectId: number): Promise<ProjectRow> {
  const project = await getProject(db, projectId);
  if (!project) throw ApiError.notFound();
  return project;
}

/**
 * A project of the organization, named by id or `@current` (the caller's current project,
 * `currentTeamId`); anything else is a 404.
 */
export async function loadOrganizationProject(
  db: Db,
  organizationId: string,
  raw: string,
  currentTeamId: number | null,
): Promise<ProjectRow> {
  const id = raw === '@current' ? currentTeamId : rowIdOf(raw);
  const project = id != null ? await getProject(db, id) : undefined;
  if (!project || project.organization_id !== organizationId) throw ApiError.notFound();
  return project;
}
