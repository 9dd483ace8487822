import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { pick } from '../core/pick.js';
import { rowIdOf } from '../core/ids.js';
import { currentOrganizationId, visibleOrganizationIds } from '../http/auth.js';
import { paginated } from '../http/pagination.js';
import { activityLogPage } from '../http/activity-log.js';
import {
  deleteProject,
  getProject,
  insertProject,
  isProjectDashboard,
  listProjects,
  moveProject,
  projectActivityPage,
  registerProductIntent,
  resetProjectToken,
  updateProject,
  type ProjectInput,
  type ProjectRow,
} from './queries.js';
import type { ProjectActivityChange } from '../db/schema/index.js';
import { SETTING_KEYS, serializeProject, serializeProjectActivity, serializeProjectBasic } from './serialize.js';
import type { components } from '../../generated/api.js';
import { pageOf } from '../core/paging.js';

type ProjectBody = components['schemas']['PatchedProjectRequest'];

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
async function projectInput(req: FastifyRequest, projectId: number | null): Promise<ProjectInput> {
  const body = (req.body ?? {}) as ProjectBody;
  const input: ProjectInput = pick(body, COLUMNS) as ProjectInput;
  if (input.timezone !== undefined && !TIMEZONES.has(input.timezone)) {
    throw ApiError.invalidChoice('timezone', input.timezone);
  }
  const settings = pick(body, SETTING_KEYS);
  if (Object.keys(settings).length) input.settings = settings;
  if (body.primary_dashboard !== undefined) {
    const id = body.primary_dashboard;
    // A new project has no dashboards yet, so only null can name one.
    if (id !== null && (projectId === null || !(await isProjectDashboard(req.server.db, projectId, id)))) {
      throw ApiError.validation('primary_dashboard', `Invalid pk "${id}" - object does not exist.`, 'does_not_exist');
    }
    input.primary_dashboard_id = id;
  }
  return input;
}

/** The activity log's changes: each written field whose answer changed. */
function changesOf(body: ProjectBody, level: number) {
  return (before: ProjectRow, after: ProjectRow): ProjectActivityChange[] => {
    const a = serializeProject(before, level) as Record<string, unknown>;
    const b = serializeProject(after, level) as Record<string, unknown>;
    return Object.keys(body ?? {})
      .filter((k) => k in a && k !== 'updated_at' && JSON.stringify(a[k]) !== JSON.stringify(b[k]))
      .map((field) => ({ type: 'Team', action: 'changed', field, before: a[field], after: b[field] }));
  };
}

async function loadProject(req: ProjectRequest) {
  const project = await getProject(req.server.db, req.tenant.project_id);
  if (!project) throw ApiError.notFound();
  return project;
}

/** A project of the path's organization, named by id or `@current`; anything else is a 404. */
async function organizationProject(req: FastifyRequest<{ Params: { id: string } }>): Promise<ProjectRow> {
  const raw = req.params.id;
  const current = req.principal.user.current_team_id;
  const id = raw === '@current' ? current : rowIdOf(raw);
  const project = id != null ? await getProject(req.server.db, id) : undefined;
  if (!project || project.organization_id !== req.tenant.organization_id) throw ApiError.notFound();
  return project;
}

async function createIn(req: FastifyRequest, organizationId: string, level: number) {
  requireLevel({ organization_id: organizationId, level }, Level.ADMIN);
  const input = await projectInput(req, null);
  const project = await insertProject(
    req.server.db,
    organizationId,
    { ...input, name: input.name ?? 'Default project' },
    req.principal.user.id,
  );
  return serializeProject(project, level);
}

async function update(req: FastifyRequest, project: ProjectRow) {
  const input = await projectInput(req, project.id);
  const level = req.tenant.level;
  const row = await updateProject(
    req.server.db,
    req.tenant.organization_id,
    project.id,
    input,
    req.principal.user.id,
    changesOf(req.body as ProjectBody, level),
  );
  if (!row) throw ApiError.notFound();
  return serializeProject(row, level);
}

async function remove(req: FastifyRequest, project: ProjectRow) {
  if (!(await deleteProject(req.server.db, req.tenant.organization_id, project.id))) throw ApiError.notFound();
}

export const projectHandlers = {
  async projects_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listProjects(req.server.db, visibleOrganizationIds(req.principal), page);
    return paginated(req, page, count, rows.map(serializeProjectBasic));
  },

  async projects_create(req, reply) {
    const organizationId = currentOrganizationId(req.principal);
    if (!organizationId) throw ApiError.notFound('Organization not found.');
    const scoped = req.principal.key.scoped_organizations;
    if (scoped?.length && !scoped.includes(organizationId)) {
      throw ApiError.permissionDenied(
        `API key does not have access to the requested organization: ID ${organizationId}.`,
      );
    }
    const level = req.principal.memberships.get(organizationId)!;
    const created = await createIn(req, organizationId, level);
    reply.code(201);
    return created;
  },

  async projects_retrieve(req) {
    return serializeProject(await loadProject(req), req.tenant.level);
  },

  async projects_partial_update(req) {
    return update(req, await loadProject(req));
  },

  async projects_update(req) {
    return update(req, await loadProject(req));
  },

  async projects_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    await remove(req, await loadProject(req));
    reply.code(204);
  },

  async organizations_projects_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listProjects(req.server.db, [req.tenant.organization_id], page);
    return paginated(req, page, count, rows.map(serializeProjectBasic));
  },

  async organizations_projects_create(req, reply) {
    const created = await createIn(req, req.tenant.organization_id, req.tenant.level);
    reply.code(201);
    return created;
  },

  async organizations_projects_retrieve(req) {
    return serializeProject(await organizationProject(req), req.tenant.level);
  },

  async organizations_projects_partial_update(req) {
    return update(req, await organizationProject(req));
  },

  async organizations_projects_update(req) {
    return update(req, await organizationProject(req));
  },

  async organizations_projects_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    await remove(req, await organizationProject(req));
    reply.code(204);
  },

  async organizations_projects_activity_retrieve(req) {
    const project = await organizationProject(req);
    return activityLogPage(
      req,
      req.query,
      (limit, page) => projectActivityPage(req.server.db, project.id, limit, page),
      serializeProjectActivity,
    );
  },

  async organizations_projects_reset_token_partial_update(req) {
    requireLevel(req.tenant, Level.ADMIN);
    const project = await organizationProject(req);
    const row = await resetProjectToken(req.server.db, req.tenant.organization_id, project.id, req.principal.user.id);
    if (!row) throw ApiError.notFound();
    return serializeProject(row, req.tenant.level);
  },

  async organizations_projects_is_generating_demo_data_retrieve(req) {
    await organizationProject(req);
    return { is_generating_demo_data: false };
  },

  async organizations_projects_add_product_intent_partial_update(req, reply) {
    const project = await organizationProject(req);
    const row = await registerProductIntent(
      req.server.db,
      req.tenant.organization_id,
      project.id,
      req.body.product_type,
      false,
    );
    if (!row) throw ApiError.notFound();
    reply.code(201);
    return serializeProject(row, req.tenant.level);
  },

  async organizations_projects_complete_product_onboarding_partial_update(req) {
    const project = await organizationProject(req);
    const row = await registerProductIntent(
      req.server.db,
      req.tenant.organization_id,
      project.id,
      req.body.product_type,
      true,
    );
    if (!row) throw ApiError.notFound();
    return serializeProject(row, req.tenant.level);
  },

  async organizations_projects_change_organization_create(req) {
    const project = await organizationProject(req);
    const target = req.body.organization_id.toLowerCase();
    const targetLevel = visibleOrganizationIds(req.principal).includes(target)
      ? req.principal.memberships.get(target)
      : undefined;
    if (targetLevel === undefined) {
      throw ApiError.validation(null, 'You must be a member of the target organization to move a project.');
    }
    if (req.tenant.level < Level.ADMIN || targetLevel < Level.ADMIN) {
      throw ApiError.validation(
        null,
        'You must be an admin of both the source and target organizations to move a project.',
      );
    }
    if (target === project.organization_id) {
      throw ApiError.validation(null, 'Project is already in the target organization.');
    }
    const moved = await moveProject(
      req.server.db,
      req.tenant.organization_id,
      project.id,
      { id: target },
      req.principal.user.id,
    );
    if (moved === undefined) throw ApiError.notFound();
    if (moved === 'private_plugins') {
      throw ApiError.validation(
        null,
        'This project uses plugins private to its organization. Remove those plugin configs before moving it.',
      );
    }
    return serializeProject(moved, targetLevel);
  },
} satisfies SomeHandlers;
