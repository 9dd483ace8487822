import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { pick } from '../core/pick.js';
import { visibleOrganizationIds } from '../http/auth.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import {
  createOrganization,
  deleteOrganization,
  listOrganizations,
  ORGANIZATION_WRITABLE,
  updateOrganization,
  type OrganizationRow,
} from './queries.js';
import { presentOrganizations, readOrganization } from './present.js';
import type { FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';

const WRITABLE = ORGANIZATION_WRITABLE;

/** The organizations as the caller sees them (their level in each), read through `db`. */
function present(req: FastifyRequest, rows: OrganizationRow[], db: Db = req.server.db) {
  return presentOrganizations(db, rows, (id) => req.principal.memberships.get(id) ?? null);
}

type OrganizationBody = components['schemas']['PatchedOrganizationRequest'];

async function update(req: FastifyRequest<{ Body: OrganizationBody | undefined }>) {
  requireLevel(req.tenant, Level.ADMIN);
  const input = pick(req.body, WRITABLE);
  // Answered from the transaction that wrote it, so an error answer means nothing was changed.
  const answer = await req.server.db.transaction(async (tx) => {
    const organization = await updateOrganization(tx, req.tenant.organization_id, input);
    if (!organization) throw ApiError.notFound();
    return (await present(req, [organization], tx))[0]!;
  });
  return answer;
}

export const organizationHandlers = {
  async organizations_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listOrganizations(req.server.db, visibleOrganizationIds(req.principal), page);
    return paginated(req, page, count, await present(req, rows));
  },

  async organizations_create(req, reply) {
    // Answered from the transaction that created it: a failed answer means no organization exists,
    // so a client retrying it does not create a second one.
    let created: string | undefined;
    const answer = await req.server.db
      .transaction(async (tx) => {
        const { organization } = await createOrganization(
          tx,
          { ...pick(req.body, WRITABLE), name: req.body.name },
          req.principal.user.id,
        );
        // The principal cached for this request predates the new membership.
        req.principal.memberships.set((created = organization.id), Level.OWNER);
        return (await present(req, [organization], tx))[0]!;
      })
      .catch((err: unknown) => {
        if (created) req.principal.memberships.delete(created);
        throw err;
      });
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
