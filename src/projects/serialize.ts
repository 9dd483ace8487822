import type { components } from '../../generated/api.js';
import type { ProjectActivityRow, ProjectRow } from './queries.js';
import type { UserRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';

type Schemas = components['schemas'];
type Project = Schemas['Project'];

/**
 * The settings kept in the project's `settings` map, with the value PostHog's Team model gives a
 * project that never wrote them.
 */
export const SETTING_DEFAULTS = {
  slack_incoming_webhook: null,
  test_account_filters_default_checked: null,
  path_cleaning_filters: [],
  data_attributes: ['data-attr'],
  person_display_name_properties: null,
  correlation_config: {},
  autocapture_exceptions_opt_in: null,
  autocapture_web_vitals_opt_in: null,
  autocapture_web_vitals_allowed_metrics: null,
  autocapture_exceptions_errors_to_ignore: null,
  capture_console_log_opt_in: true,
  capture_performance_opt_in: true,
  session_recording_opt_in: false,
  session_recording_sample_rate: null,
  session_recording_minimum_duration_milliseconds: null,
  session_recording_linked_flag: null,
  session_recording_network_payload_capture_config: null,
  session_recording_masking_config: null,
  session_replay_config: null,
  survey_config: null,
  week_start_day: null,
  live_events_columns: null,
  recording_domains: null,
  inject_web_apps: null,
  extra_settings: null,
  modifiers: null,
  surveys_opt_in: null,
  flags_persistence_default: false,
  receive_org_level_activity_logs: false,
} satisfies Partial<Project>;

export type SettingKey = keyof typeof SETTING_DEFAULTS;
export const SETTING_KEYS = Object.keys(SETTING_DEFAULTS) as SettingKey[];

/**
 * The query modifiers in force here, in PostHog's words: persons are read when a query runs, never
 * copied onto events, which PostHog calls `personsOnEventsMode: disabled`.
 */
const DEFAULT_MODIFIERS = { personsOnEventsMode: 'disabled' } as const;

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

/** The stored settings over PostHog's defaults, only the known keys. */
export function projectSettings(p: ProjectRow): Pick<Project, SettingKey> {
  const out: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) out[key] = key in p.settings ? p.settings[key] : SETTING_DEFAULTS[key];
  return out as Pick<Project, SettingKey>;
}

export function serializeProject(p: ProjectRow, level: number | null): Project {
  return {
    ...serializeProjectBasic(p),
    created_at: p.created_at.toISOString(),
    updated_at: p.updated_at.toISOString(),
    effective_membership_level: level as Project['effective_membership_level'],
    app_urls: p.app_urls,
    anonymize_ips: p.anonymize_ips,
    test_account_filters: p.test_account_filters,
    product_description: p.product_description,
    autocapture_opt_out: p.autocapture_opt_out,
    heatmaps_opt_in: p.heatmaps_opt_in,
    primary_dashboard: p.primary_dashboard_id,
    ...projectSettings(p),
    has_group_types: false,
    group_types: [],
    live_events_token: null,
    person_on_events_querying_enabled: false,
    default_modifiers: { ...DEFAULT_MODIFIERS },
    product_intents: p.product_intents,
    secret_api_token: null,
    secret_api_token_backup: null,
  };
}

export function serializeProjectActivity(
  a: ProjectActivityRow,
  user: UserRow | undefined,
): Schemas['ProjectActivityEntry'] {
  return {
    id: a.id,
    user: user ? serializeUserBasic(user) : null,
    activity: a.activity as Schemas['ProjectActivityEntry']['activity'],
    scope: 'Team',
    item_id: String(a.project_id),
    detail: a.detail,
    created_at: a.created_at.toISOString(),
  };
}
