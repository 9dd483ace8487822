import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { pick } from '../core/pick.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import {
  deleteDomain,
  domainTaken,
  getDomain,
  insertDomain,
  listDomains,
  recordVerification,
  renameDomain,
  updateDomain,
  type DomainInput,
  type DomainRow,
} from '../db/queries/domains.js';
import { resolveTxt } from '../dns.js';
import { serializeDomain } from '../serializers/domains.js';
import type { components } from '../../generated/api.js';
import { isUuid } from '../core/ids.js';

const SAML = ['saml_entity_id', 'saml_acs_url', 'saml_x509_cert'] as const;
// PostHog refuses these until the domain is verified, and drops them on create.
const VERIFIED_ONLY = ['jit_provisioning_enabled', 'sso_enforcement'] as const;

const taken = () => ApiError.validation('domain', 'domain with this domain already exists.', 'unique');

async function pathDomain(req: FastifyRequest<{ Params: { id: string } }>): Promise<DomainRow> {
  const { id } = req.params;
  const row = isUuid(id) ? await getDomain(req.server.db, req.tenant.organization_id, id.toLowerCase()) : undefined;
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

type DomainBody = components['schemas']['PatchedOrganizationDomainRequest'];

/** PATCH and PUT: PostHog's rules, in its order (verification first, then the features). */
async function update(req: FastifyRequest<{ Params: { id: string }; Body: DomainBody | undefined }>) {
  requireLevel(req.tenant, Level.ADMIN);
  const current = await pathDomain(req);
  const body = req.body ?? {};
  const input: DomainInput = pick(body, [...VERIFIED_ONLY, ...SAML]);
  if (!current.verified_at) {
    const refused = VERIFIED_ONLY.find((field) => field in input);
    if (refused) {
      throw ApiError.validation(
        refused,
        'This attribute cannot be updated until the domain is verified.',
        'verification_required',
      );
    }
  }
  if (body.scim_enabled !== undefined) {
    throw ApiError.validation(
      'scim_enabled',
      'SCIM provisioning is not available for this organization.',
      'feature_not_available',
    );
  }
  const renamed = body.domain !== undefined && body.domain !== current.domain;
  if (renamed && (await domainTaken(req.server.db, body.domain!))) throw taken();
  const row = renamed
    ? await renameDomain(req.server.db, req.tenant.organization_id, current.id, body.domain!, input)
    : await updateDomain(req.server.db, req.tenant.organization_id, current.id, input);
  if (row === null) throw taken();
  if (!row) throw ApiError.notFound();
  return serializeDomain(row);
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
    if (domain.verified_at) {
      throw ApiError.validation(null, 'This domain has already been verified.', 'already_verified');
    }
    const verified = await challengePublished(req, domain);
    const row = await recordVerification(req.server.db, req.tenant.organization_id, domain.id, verified);
    if (!row) throw ApiError.notFound();
    return serializeDomain(row);
  },
} satisfies SomeHandlers;
