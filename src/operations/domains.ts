import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { Level, pick, requireLevel } from '../http/access.js';
import { pageOf, paginated } from '../http/pagination.js';
import {
  deleteDomain,
  domainTaken,
  getDomain,
  insertDomain,
  listDomains,
  recordVerification,
  updateDomain,
  type DomainRow,
} from '../db/queries/domains.js';
import { resolveTxt } from '../dns.js';
import { serializeDomain } from '../serializers/domains.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SAML = ['saml_entity_id', 'saml_acs_url', 'saml_x509_cert'] as const;
// PostHog refuses these until the domain is verified, and drops them on create.
const VERIFIED_ONLY = ['jit_provisioning_enabled', 'sso_enforcement'] as const;

const taken = () => ApiError.validation('domain', 'domain with this domain already exists.', 'unique');

async function pathDomain(req: FastifyRequest<{ Params: { id: string } }>): Promise<DomainRow> {
  const { id } = req.params;
  const row = UUID.test(id) ? await getDomain(req.server.db, req.tenant.organization_id, id.toLowerCase()) : undefined;
  if (!row) throw ApiError.notFound();
  return row;
}

/** Whether `_posthog-challenge.<domain>` carries the challenge; a failing resolver counts as no. */
async function challengePublished(req: FastifyRequest, domain: DomainRow): Promise<boolean> {
  try {
    const values = await resolveTxt(`_posthog-challenge.${domain.domain}`, req.server.config.dnsServers);
    return values.some((v) => v.trim() === domain.verification_challenge);
  } catch (err) {
    req.log.warn({ err, domain: domain.domain }, 'domain verification lookup failed');
    return false;
  }
}

export const domainHandlers = {
  async domains_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listDomains(req.server.db, req.tenant.organization_id, page);
    return paginated(req, page, count, rows.map(serializeDomain));
  },

  async domains_create(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    const { domain } = req.body;
    if (await domainTaken(req.server.db, domain)) throw taken();
    const row = await insertDomain(req.server.db, req.tenant.organization_id, { ...pick(req.body, SAML), domain });
    if (!row) throw taken();
    reply.code(201);
    return serializeDomain(row);
  },

  async domains_retrieve(req) {
    return serializeDomain(await pathDomain(req));
  },

  async domains_partial_update(req) {
    requireLevel(req.tenant, Level.ADMIN);
    const current = await pathDomain(req);
    const input = pick(req.body, [...VERIFIED_ONLY, ...SAML]);
    if (!current.verified_at) {
      const refused = VERIFIED_ONLY.find((field) => field in input);
      if (refused) {
        throw ApiError.validation(refused, 'This attribute cannot be updated until the domain is verified.', 'verification_required');
      }
    }
    const row = await updateDomain(req.server.db, req.tenant.organization_id, current.id, input);
    if (!row) throw ApiError.notFound();
    return serializeDomain(row);
  },

  async domains_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    const { id } = req.params;
    if (!UUID.test(id) || !(await deleteDomain(req.server.db, req.tenant.organization_id, id.toLowerCase()))) {
      throw ApiError.notFound();
    }
    reply.code(204);
  },

  async domains_verify_create(req) {
    requireLevel(req.tenant, Level.ADMIN);
    const domain = await pathDomain(req);
    if (domain.verified_at) {
      throw ApiError.validation(null, 'This domain has already been verified.', 'already_verified');
    }
    const verified = await challengePublished(req, domain);
    const row = await recordVerification(req.server.db, req.tenant.organization_id, domain.id, verified);
    if (!row) throw ApiError.notFound();
    return serializeDomain(row);
  },
} satisfies SomeHandlers;
