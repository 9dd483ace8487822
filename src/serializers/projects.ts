import type { components } from '../../generated/api.js';
import type { ProjectRow } from '../db/queries/projects.js';

type Schemas = components['schemas'];

export function serializeProjectBasic(p: ProjectRow): Schemas['ProjectBasic'] {
  return {
    id: p.id,
    uuid: p.uuid,
    organization: p.organization_id,
    project_id: p.id,
    api_token: p.api_token,
    name: p.name,
    completed_snippet_onboarding: p.completed_snippet_onboarding,
    has_completed_onboarding_for: p.has_completed_onboarding_for,
    ingested_event: p.ingested_event,
    is_demo: p.is_demo,
    timezone: p.timezone,
    access_control: p.access_control,
  };
}

export function serializeProject(p: ProjectRow, level: number | null): Schemas['Project'] {
  return {
    ...serializeProjectBasic(p),
    created_at: p.created_at.toISOString(),
    updated_at: p.updated_at.toISOString(),
    effective_membership_level: level as Schemas['Project']['effective_membership_level'],
    app_urls: p.app_urls,
    anonymize_ips: p.anonymize_ips,
    test_account_filters: p.test_account_filters,
    product_description: p.product_description,
    autocapture_opt_out: p.autocapture_opt_out,
    heatmaps_opt_in: p.heatmaps_opt_in,
  };
}
