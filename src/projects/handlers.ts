import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { currentOrganizationId, visibleOrganizationIds } from '../http/auth.js';
import { paginated } from '../http/pagination.js';
import { activityLogPage } from '../http/activity-log.js';
import { listProjects, projectActivityPage, registerProductIntent, resetProjectToken } from './queries.js';
import { serializeProject, serializeProjectActivity, serializeProjectBasic } from './serialize.js';
import { loadOrganizationProject, loadProject } from './load.js';
import type { ProjectRow } from './queries.js';
import { changeProject, createProject, moveToOrganization, removeProject, type ProjectBody } from './update.js';
import { pageOf } from '../core/paging.js';

const project = (req: ProjectRequest) => loadProject(req.server.db, req.tenant.project_id);

/** A project of the path's organization, named by id or `@current`. */
const organizationProject = (req: FastifyRequest<{ Params: { id: string } }>) =>
  loadOrganizationProject(req.server.db, req.tenant.organization_id, req.params.id, req.principal.user.current_team_id);

const update = async (req: FastifyRequest, row: ProjectRow) =>
  changeProject(req.server.db, req.tenant, row, req.body as ProjectBody | undefined, req.principal.user.id);

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
    const created = await createProject(
      req.server.db,
      { organization_id: organizationId, level },
      req.body as ProjectBody | undefined,
      req.principal.user.id,
    );
    reply.code(201);
    return created;
  },

  async projects_retrieve(req) {
    return serializeProject(await project(req), req.tenant.level);
  },

  async projects_partial_update(req) {
    return update(req, await project(req));
  },

  async projects_update(req) {
    return update(req, await project(req));
  },

  async projects_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    await removeProject(req.server.db, req.tenant, await project(req));
    reply.code(204);
  },

  async organizations_projects_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listProjects(req.server.db, [req.tenant.organization_id], page);
    return paginated(req, page, count, rows.map(serializeProjectBasic));
  },

  async organizations_projects_create(req, reply) {
    const created = await createProject(
      req.server.db,
      req.tenant,
      req.body as ProjectBody | undefined,
      req.principal.user.id,
    );
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
    await removeProject(req.server.db, req.tenant, await organizationProject(req));
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
    return moveToOrganization(req.server.db, req.tenant, project, target, targetLevel, req.principal.user.id);
  },
} satisfies SomeHandlers;
