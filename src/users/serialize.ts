import type { components } from '../../generated/api.js';
import type { UserBasicRow, UserRow } from './queries.js';

type Schemas = components['schemas'];

export function serializeUserBasic(u: UserBasicRow): Schemas['UserBasic'] {
  return {
    id: u.id,
    uuid: u.uuid,
    distinct_id: u.distinct_id,
    first_name: u.first_name,
    last_name: u.last_name,
    email: u.email,
    is_email_verified: u.is_email_verified,
    hedgehog_config: u.hedgehog_config,
    role_at_organization: u.role_at_organization as Schemas['UserBasic']['role_at_organization'],
  };
}

/** PostHog's NOTIFICATION_DEFAULTS: a user stores only what they changed. */
export const NOTIFICATION_DEFAULTS = {
  plugin_disabled: true,
  error_tracking_issue_assigned: true,
  discussions_mentioned: true,
  project_weekly_digest_disabled: {},
  all_weekly_digest_disabled: false,
};

export interface UserContext {
  organization: Schemas['NullableOrganization'];
  team: Schemas['NullableProjectBasic'];
  organizations: Schemas['OrganizationBasic'][];
  has_sso_enforcement: boolean;
}

export function serializeUser(u: UserRow, c: UserContext): Schemas['User'] {
  return {
    ...serializeUserBasic(u),
    date_joined: u.date_joined.toISOString(),
    // Features of PostHog's login that do not exist here: no pending e-mail change, no password, no
    // impersonation, no sessions, no second factor, no social login, no scene personalisation.
    pending_email: null,
    notification_settings: { ...NOTIFICATION_DEFAULTS, ...(u.partial_notification_settings ?? {}) },
    anonymize_data: u.anonymize_data,
    toolbar_mode: u.toolbar_mode as Schemas['User']['toolbar_mode'],
    has_password: false,
    is_staff: u.is_staff,
    is_impersonated: false,
    is_impersonated_until: null,
    sensitive_session_expires_at: null,
    team: c.team,
    organization: c.organization,
    organizations: c.organizations,
    events_column_config: u.events_column_config,
    is_2fa_enabled: false,
    has_social_auth: false,
    has_sso_enforcement: c.has_sso_enforcement,
    has_seen_product_intro_for: u.has_seen_product_intro_for as Schemas['User']['has_seen_product_intro_for'],
    scene_personalisation: [],
    theme_mode: u.theme_mode as Schemas['User']['theme_mode'],
    allow_sidebar_suggestions: u.allow_sidebar_suggestions,
  };
}
