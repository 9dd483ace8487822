import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { Level, pick, requireLevel } from '../http/access.js';
import { currentOrganizationId, visibleOrganizationIds } from '../http/auth.js';
import { pageOf, paginated } from '../http/pagination.js';
import { deleteProject, getProject, insertProject, listProjects, updateProject } from '../db/queries/projects.js';
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
    requireLevel({ organization_id: organizationId, level }, Level.ADMIN);
    const input = pick(req.body, WRITABLE);
    checkTimezone(input.timezone);
    const project = await insertProject(req.server.db, organizationId, { ...input, name: input.name ?? 'Default project' });
    await req.server.authCache.invalidate();
    reply.code(201);
    return serializeProject(project, level);
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
} satisfies SomeHandlers;
