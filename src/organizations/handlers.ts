import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { pick } from '../core/pick.js';
import { visibleOrganizationIds } from '../http/auth.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import { deleteOrganization, listOrganizations, ORGANIZATION_WRITABLE } from './queries.js';
import { presentOrganizations, readOrganization } from './present.js';
import { createOrganizationFor } from './create.js';
import { updateOrganizationAs } from './update.js';
import type { FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';

const WRITABLE = ORGANIZATION_WRITABLE;

/** The caller's level in an organization, from the principal cached for this request. */
const levelOf = (req: FastifyRequest) => (id: string) => req.principal.memberships.get(id) ?? null;

type OrganizationBody = components['schemas']['PatchedOrganizationRequest'];

function update(req: FastifyRequest<{ Body: OrganizationBody | undefined }>) {
  return updateOrganizationAs(req.server.db, req.tenant, pick(req.body, WRITABLE), levelOf(req));
}

export const organizationHandlers = {
  async organizations_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listOrganizations(req.server.db, visibleOrganizationIds(req.principal), page);
    return paginated(req, page, count, await presentOrganizations(req.server.db, rows, levelOf(req)));
  },

  async organizations_create(req, reply) {
    const { id, answer } = await createOrganizationFor(
      req.server.db,
      { ...pick(req.body, WRITABLE), name: req.body.name },
      req.principal.user.id,
      levelOf(req),
    );
    // The principal cached for this request predates the new membership.
    req.principal.memberships.set(id, Level.OWNER);
    reply.code(201);
    return answer;
  },

  async organizations_retrieve(req) {
    const organization = await readOrganization(req.server.db, req.tenant.organization_id, req.tenant.level);
    if (!organization) throw ApiError.notFound();
    return organization;
  },

  async organizations_partial_update(req) {
    return update(req);
  },

  async organizations_update(req) {
    return update(req);
  },

  async organizations_destroy(req, reply) {
    requireLevel(req.tenant, Level.OWNER);
    await deleteOrganization(req.server.db, req.tenant.organization_id);
    reply.code(204);
  },
} satisfies SomeHandlers;
