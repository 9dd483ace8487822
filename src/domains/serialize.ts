import type { components } from '../../generated/api.js';
import type { DomainRow } from './queries.js';

export function serializeDomain(d: DomainRow): components['schemas']['OrganizationDomain'] {
  return {
    id: d.id,
    domain: d.domain,
    is_verified: d.verified_at !== null,
    verified_at: d.verified_at?.toISOString() ?? null,
    verification_challenge: d.verification_challenge,
    jit_provisioning_enabled: d.jit_provisioning_enabled,
    sso_enforcement: d.sso_enforcement,
    has_saml: Boolean(d.saml_entity_id && d.saml_acs_url && d.saml_x509_cert),
    saml_entity_id: d.saml_entity_id,
    saml_acs_url: d.saml_acs_url,
    saml_x509_cert: d.saml_x509_cert,
    // This server serves no SCIM API, so SCIM is never configured (PostHog's answers for a domain without it).
    has_scim: false,
    scim_enabled: false,
    scim_base_url: null,
    scim_bearer_token: null,
  };
}
