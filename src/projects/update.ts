// Creating, changing, deleting and moving a project: the body's fields checked, then written with
// the activity they make.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { pick } from '../core/pick.js';
import type { OrganizationTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import type { ProjectActivityChange } from '../db/schema/index.js';
import { refreshTestAccountFilters } from '../hog-functions/index.js';
import {
  deleteProject,
  insertProject,
  isProjectDashboard,
  moveProject,
  updateProject,
  type ProjectInput,
  type ProjectRow,
} from './queries.js';
import { SETTING_KEYS, serializeProject } from './serialize.js';

export type ProjectBody = components['schemas']['PatchedProjectRequest'];

const COLUMNS = [
  'name',
  'timezone',
  'completed_snippet_onboarding',
  'has_completed_onboarding_for',
  'is_demo',
  'access_control',
  'app_urls',
  'anonymize_ips',
  'test_account_filters',
  'product_description',
  'autocapture_opt_out',
  'heatmaps_opt_in',
] as const;

const TIMEZONES = new Set(['UTC', ...Intl.supportedValuesOf('timeZone')]);

/** The body's writable fields, checked, as columns and settings; read-only and unknown fields are dropped. */
async function projectInput(db: Db, body: ProjectBody | undefined, projectId: number | null): Promise<ProjectInput> {
  const fields = body ?? {};
  const input: ProjectInput = pick(fields, COLUMNS) as ProjectInput;
  if (input.timezone !== undefined && !TIMEZONES.has(input.timezone)) {
    throw ApiError.invalidChoice('timezone', input.timezone);
  }
  const settings = pick(fields, SETTING_KEYS);
  if (Object.keys(settings).length) input.settings = settings;
  if (fields.primary_dashboard !== undefined) {
    const id = fields.primary_dashboard;
    // A new project has no dashboards yet, so only null can name one.
    if (id !== null && (projectId === null || !(await isProjectDashboard(db, projectId, id)))) {
      throw ApiError.validation('primary_dashboard', `Invalid pk "${id}" - object does not exist.`, 'does_not_exist');
    }
    input.primary_dashboard_id = id;
  }
  return input;
}

/** The activity log's changes: each written field whose answer changed. */
function changesOf(body: ProjectBody | undefined, level: number) {
  return (before: ProjectRow, after: ProjectRow): ProjectActivityChange[] => {
    const a = serializeProject(before, level) as Record<string, unknown>;
    const b = serializeProject(after, level) as Record<string, unknown>;
    return Object.keys(body ?? {})
      .filter((k) => k in a && k !== 'updated_at' && JSON.stringify(a[k]) !== JSON.stringify(b[k]))
      .map((field) => ({ type: 'Team', action: 'changed', field, before: a[field], after: b[field] }));
  };
}

/** A new project of the organization, made by an administrator of it (`scope.level`). */
export async function createProject(db: Db, scope: OrganizationTenant, body: ProjectBody | undefined, userId: number) {
  requireLevel(scope, Level.ADMIN);
  const input = await projectInput(db, body, null);
  const project = await insertProject(
    db,
    scope.organization_id,
    { ...input, name: input.name ?? 'Default project' },
    userId,
  );
  return serializeProject(project, scope.level);
}

/** The body written over the project, with the activity it makes; the project as the caller sees it. */
export async function changeProject(
  db: Db,
  scope: OrganizationTenant,
  project: ProjectRow,
  body: ProjectBody | undefined,
  userId: number,
) {
  const input = await projectInput(db, body, project.id);
  const row = await updateProject(db, scope.organization_id, project.id, input, userId, changesOf(body, scope.level));
  if (!row) throw ApiError.notFound();
  if (input.test_account_filters !== undefined) await refreshTestAccountFilters(db, project.id);
  return serializeProject(row, scope.level);
}

/** Deletes the project (its caller has checked the level: PostHog refuses before looking the project up). */
export async function removeProject(db: Db, scope: OrganizationTenant, project: ProjectRow): Promise<void> {
  if (!(await deleteProject(db, scope.organization_id, project.id))) throw ApiError.notFound();
}

/**
 * PostHog's rules for moving a project to another organization: the caller administers both
 * (`targetLevel`, undefined where they are not a member), and private plugins stay behind.
 */
export async function moveToOrganization(
  db: Db,
  scope: OrganizationTenant,
  project: ProjectRow,
  target: string,
  targetLevel: number | undefined,
  userId: number,
) {
  if (targetLevel === undefined) {
    throw ApiError.validation(null, 'You must be a member of the target organization to move a project.');
  }
  if (scope.level < Level.ADMIN || targetLevel < Level.ADMIN) {
    throw ApiError.validation(
      null,
      'You must be an admin of both the source and target organizations to move a project.',
    );
  }
  if (target === project.organization_id) {
    throw ApiError.validation(null, 'Project is already in the target organization.');
  }
  const moved = await moveProject(db, scope.organization_id, project.id, { id: target }, userId);
  if (moved === undefined) throw ApiError.notFound();
  if (moved === 'private_plugins') {
    throw ApiError.validation(
      null,
      'This project uses plugins private to its organization. Remove those plugin configs before moving it.',
    );
  }
  return serializeProject(moved, targetLevel);
}
