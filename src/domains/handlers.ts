import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import { deleteDomain, listDomains } from './queries.js';
import { changeDomain, createDomain, loadDomain, verifyDomain } from './domains.js';
import { serializeDomain } from './serialize.js';
import type { components } from '../../generated/api.js';
import { isUuid } from '../core/ids.js';

type DomainBody = components['schemas']['PatchedOrganizationDomainRequest'];

const pathDomain = (req: FastifyRequest<{ Params: { id: string } }>) =>
  loadDomain(req.server.db, req.tenant.organization_id, req.params.id);

/** PATCH and PUT. */
async function update(req: FastifyRequest<{ Params: { id: string }; Body: DomainBody | undefined }>) {
  requireLevel(req.tenant, Level.ADMIN);
  const current = await pathDomain(req);
  return serializeDomain(await changeDomain(req.server.db, req.tenant.organization_id, current, req.body ?? {}));
}

export const domainHandlers = {
  async domains_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listDomains(req.server.db, req.tenant.organization_id, page);
    return paginated(req, page, count, rows.map(serializeDomain));
  },

  async domains_create(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    const row = await createDomain(req.server.db, req.tenant.organization_id, req.body);
    reply.code(201);
    return serializeDomain(row);
  },

  async domains_retrieve(req) {
    return serializeDomain(await pathDomain(req));
  },

  async domains_partial_update(req) {
    return update(req);
  },

  async domains_update(req) {
    return update(req);
  },

  async domains_scim_token_create(req) {
    requireLevel(req.tenant, Level.ADMIN);
    await pathDomain(req);
    // PostHog's answer for an organization without SCIM: this server has no SCIM API to hand a token for.
    throw ApiError.permissionDenied('SCIM is not available for this organization');
  },

  async domains_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    const { id } = req.params;
    if (!isUuid(id) || !(await deleteDomain(req.server.db, req.tenant.organization_id, id.toLowerCase()))) {
      throw ApiError.notFound();
    }
    reply.code(204);
  },

  async domains_verify_create(req) {
    requireLevel(req.tenant, Level.ADMIN);
    const domain = await pathDomain(req);
    const { db, config } = req.server;
    const warn = (obj: object, msg: string) => req.log.warn(obj, msg);
    return serializeDomain(await verifyDomain(db, req.tenant.organization_id, domain, config.dnsServers, warn));
  },
} satisfies SomeHandlers;
