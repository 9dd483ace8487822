import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { Level, pick, requireLevel } from '../http/access.js';
import { currentOrganizationId, visibleOrganizationIds } from '../http/auth.js';
import { pageOf, paginated } from '../http/pagination.js';
import { deleteProject, getProject, insertProject, listProjects, updateProject, type ProjectRow } from '../db/queries/projects.js';
import { serializeProject, serializeProjectBasic } from '../serializers/projects.js';

const WRITABLE = [
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

function checkTimezone(timezone: string | undefined): void {
  if (timezone !== undefined && !TIMEZONES.has(timezone)) throw ApiError.invalidChoice('timezone', timezone);
}

async function loadProject(req: FastifyRequest) {
  const project = await getProject(req.server.db, req.tenant.project_id!);
  if (!project) throw ApiError.notFound();
  return project;
}

/** A project of the path's organization, named by id or `@current`; anything else is a 404. */
async function organizationProject(req: FastifyRequest<{ Params: { id: string } }>): Promise<ProjectRow> {
  const raw = req.params.id;
  const current = req.principal.user.current_team_id;
  const id = raw === '@current' ? current : /^\d{1,10}$/.test(raw) ? Number(raw) : null;
  const project = id !== null && id <= 2147483647 ? await getProject(req.server.db, id) : undefined;
  if (!project || project.organization_id !== req.tenant.organization_id) throw ApiError.notFound();
  return project;
}

async function createIn(req: FastifyRequest<{ Body: Parameters<typeof pick>[0] }>, organizationId: string, level: number) {
  requireLevel({ organization_id: organizationId, level }, Level.ADMIN);
  const input = pick(req.body as ProjectBody | undefined, WRITABLE);
  checkTimezone(input.timezone);
  const project = await insertProject(req.server.db, organizationId, { ...input, name: input.name ?? 'Default project' });
  await req.server.authCache.invalidate();
  return serializeProject(project, level);
}

type ProjectBody = { [K in (typeof WRITABLE)[number]]?: ProjectRow[K] };

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
      throw ApiError.permissionDenied(`API key does not have access to the requested organization: ID ${organizationId}.`);
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
    const input = pick(req.body, WRITABLE);
    checkTimezone(input.timezone);
    const project = await updateProject(req.server.db, req.tenant.project_id!, input);
    if (!project) throw ApiError.notFound();
    return serializeProject(project, req.tenant.level);
  },

  async projects_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    await loadProject(req);
    await deleteProject(req.server.db, req.tenant.project_id!);
    await req.server.authCache.invalidate();
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
    const current = await organizationProject(req);
    const input = pick(req.body, WRITABLE);
    checkTimezone(input.timezone);
    const project = await updateProject(req.server.db, current.id, input);
    if (!project) throw ApiError.notFound();
    return serializeProject(project, req.tenant.level);
  },

  async organizations_projects_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    const current = await organizationProject(req);
    await deleteProject(req.server.db, current.id);
    await req.server.authCache.invalidate();
    reply.code(204);
  },
} satisfies SomeHandlers;
