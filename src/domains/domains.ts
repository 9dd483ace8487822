// Organization domains: loading one by its path id, PostHog's rules for changing one, and verifying it
// by its DNS challenge.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { pick } from '../core/pick.js';
import type { Db } from '../db/client.js';
import {
  domainTaken,
  getDomain,
  insertDomain,
  recordVerification,
  updateDomain,
  type DomainInput,
  type DomainRow,
} from './queries.js';
import { resolveTxt } from '../dns.js';

type DomainBody = components['schemas']['PatchedOrganizationDomainRequest'];

const SAML = ['saml_entity_id', 'saml_acs_url', 'saml_x509_cert'] as const;
// PostHog refuses these until the domain is verified, and drops them on create.
const VERIFIED_ONLY = ['jit_provisioning_enabled', 'sso_enforcement'] as const;

const taken = () => ApiError.validation('domain', 'domain with this domain already exists.', 'unique');

/** The organization's domain `id` (any case), or a 404 for a malformed or foreign id. */
export async function loadDomain(db: Db, organizationId: string, id: string): Promise<DomainRow> {
  const row = isUuid(id) ? await getDomain(db, organizationId, id.toLowerCase()) : undefined;
  if (!row) throw ApiError.notFound();
  return row;
}

export async function createDomain(
  db: Db,
  organizationId: string,
  body: components['schemas']['OrganizationDomainRequest'],
): Promise<DomainRow> {
  const { domain } = body;
  if (await domainTaken(db, domain)) throw taken();
  const row = await insertDomain(db, organizationId, { ...pick(body, SAML), domain });
  if (!row) throw taken();
  return row;
}

/**
 * PATCH and PUT: PostHog's rules, in its order (verification first, then the features). The name is never
 * read: PostHog makes `domain` read-only on an existing domain, so any value is ignored, not validated.
 */
export async function changeDomain(
  db: Db,
  organizationId: string,
  current: DomainRow,
  body: DomainBody,
): Promise<DomainRow> {
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
  const row = await updateDomain(db, organizationId, current.id, input);
  if (!row) throw ApiError.notFound();
  return row;
}

/**
 * Records whether `_posthog-challenge.<domain>` carries the challenge; a failing resolver counts as
 * no (and is reported to `warn`).
 */
export async function verifyDomain(
  db: Db,
  organizationId: string,
  domain: DomainRow,
  dnsServers: string[] | undefined,
  warn: (obj: object, msg: string) => void,
): Promise<DomainRow> {
  if (domain.verified_at) {
    throw ApiError.validation(null, 'This domain has already been verified.', 'already_verified');
  }
  let verified: boolean;
  try {
    const values = await resolveTxt(`_posthog-challenge.${domain.domain}`, dnsServers);
    verified = values.some((v) => v.trim() === domain.verification_challenge);
  } catch (err) {
    warn({ err, domain: domain.domain }, 'domain verification lookup failed');
    verified = false;
  }
  const row = await recordVerification(db, organizationId, domain.id, verified);
  if (!row) throw ApiError.notFound();
  return row;
}
