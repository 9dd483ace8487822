import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { Level, pick, requireLevel } from '../http/access.js';
import { visibleOrganizationIds } from '../http/auth.js';
import { pageOf, paginated } from '../http/pagination.js';
import {
  createOrganization,
  deleteOrganization,
  getOrganization,
  listOrganizations,
  organizationExtras,
  updateOrganization,
  type OrganizationRow,
} from '../db/queries/organizations.js';
import { serializeOrganization } from '../serializers/organizations.js';
import type { FastifyRequest } from 'fastify';

const WRITABLE = ['name', 'logo_media_id', 'is_member_join_email_enabled', 'enforce_2fa'] as const;

const instanceTag = () => process.env.INSTANCE_TAG || 'none';

async function present(req: FastifyRequest, rows: OrganizationRow[]) {
  const extras = await organizationExtras(req.server.db, rows.map((o) => o.id));
  return rows.map((o) => serializeOrganization(o, req.principal.memberships.get(o.id) ?? null, extras.get(o.id)!, instanceTag()));
}

export const organizationHandlers = {
  async organizations_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listOrganizations(req.server.db, visibleOrganizationIds(req.principal), page);
    return paginated(req, page, count, await present(req, rows));
  },

  async organizations_create(req, reply) {
    const { organization } = await createOrganization(
      req.server.db,
      { ...pick(req.body, WRITABLE), name: req.body.name },
      req.principal.user.id,
    );
    await req.server.authCache.invalidate();
    // The principal cached for this request predates the new membership.
    req.principal.memberships.set(organization.id, Level.OWNER);
    reply.code(201);
    return (await present(req, [organization]))[0]!;
  },

  async organizations_retrieve(req) {
    // The organization and its extras in parallel: membership already proved it exists.
    const id = req.tenant.organization_id;
    const [organization, extras] = await Promise.all([getOrganization(req.server.db, id), organizationExtras(req.server.db, [id])]);
    if (!organization) throw ApiError.notFound();
    return serializeOrganization(organization, req.tenant.level, extras.get(id)!, instanceTag());
  },

  async organizations_partial_update(req) {
    requireLevel(req.tenant, Level.ADMIN);
    const organization = await updateOrganization(req.server.db, req.tenant.organization_id, pick(req.body, WRITABLE));
    if (!organization) throw ApiError.notFound();
    return (await present(req, [organization]))[0]!;
  },

  async organizations_destroy(req, reply) {
    requireLevel(req.tenant, Level.OWNER);
    await deleteOrganization(req.server.db, req.tenant.organization_id);
    await req.server.authCache.invalidate();
    reply.code(204);
  },
} satisfies SomeHandlers;
