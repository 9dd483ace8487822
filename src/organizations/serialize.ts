import type { components } from '../../generated/api.js';
import type { OrganizationExtras, OrganizationRow } from './queries.js';
import { serializeProjectBasic } from '../projects/serialize.js';

type Organization = components['schemas']['Organization'];

// Every feature PostHog sells is simply on here.
const PRODUCT_FEATURES = [
  { key: 'advanced_permissions', name: 'Advanced permissions' },
  { key: 'tagging', name: 'Dashboard tags' },
  { key: 'ingestion_taxonomy', name: 'Ingestion taxonomy' },
  { key: 'automatic_provisioning', name: 'Automatic provisioning' },
  { key: 'organizations_projects', name: 'Multiple organizations and projects' },
  { key: 'data_pipelines', name: 'Data pipelines' },
  { key: 'high_frequency_batch_exports', name: 'High-frequency batch exports' },
  { key: 'sso_enforcement', name: 'SSO enforcement' },
  { key: 'saml', name: 'SAML' },
];

/** PostHog's settings.INSTANCE_TAG, which its organizations report as `metadata.instance_tag`. */
export const instanceTag = () => process.env.INSTANCE_TAG || 'none';

export function serializeOrganization(
  o: OrganizationRow,
  level: number | null,
  extras: OrganizationExtras,
  instanceTag: string,
): Organization {
  return {
    id: o.id,
    name: o.name,
    slug: o.slug,
    logo_media_id: o.logo_media_id,
    created_at: o.created_at.toISOString(),
    updated_at: o.updated_at.toISOString(),
    membership_level: level as Organization['membership_level'],
    plugins_access_level: o.plugins_access_level as Organization['plugins_access_level'],
    teams: extras.projects.map(serializeProjectBasic),
    projects: extras.projects.map((p) => ({ id: p.id, organization_id: p.organization_id, name: p.name })),
    available_product_features: PRODUCT_FEATURES,
    is_member_join_email_enabled: o.is_member_join_email_enabled,
    metadata: { instance_tag: instanceTag },
    customer_id: o.customer_id,
    enforce_2fa: o.enforce_2fa,
    members_can_invite: o.members_can_invite,
    members_can_use_personal_api_keys: o.members_can_use_personal_api_keys,
    allow_publicly_shared_resources: o.allow_publicly_shared_resources,
    member_count: o.member_count,
    is_ai_data_processing_approved: o.is_ai_data_processing_approved,
    default_experiment_stats_method:
      o.default_experiment_stats_method as Organization['default_experiment_stats_method'],
    default_anonymize_ips: o.default_anonymize_ips,
    // This server has no roles to assign to new members.
    default_role_id: null,
  };
}
