import type { components } from '../../generated/api.js';
import type { PluginWithOrg } from './queries.js';
import type { PluginConfigRow, ActivityRow } from './config-queries.js';
import type { UserRow } from '../users/queries.js';
import { displayUrl } from './archive.js';
import { serializeUserBasic } from '../users/serialize.js';

type Plugin = components['schemas']['Plugin'];
type PluginConfig = components['schemas']['PluginConfig'];
type ActivityLogEntry = components['schemas']['ActivityLogEntry'];

export const SECRET_FIELD_VALUE = '**************** POSTHOG SECRET FIELD ****************';
const LATEST_TAG_FRESH_MS = 30 * 60 * 1000;

/** `latest_tag` is shown while it differs from `tag`, or for half an hour after the check (PostHog's rule). */
function latestTag(p: PluginWithOrg): string | null {
  if (!p.latest_tag || !p.latest_tag_checked_at) return null;
  if (p.latest_tag !== p.tag || p.latest_tag_checked_at.getTime() > Date.now() - LATEST_TAG_FRESH_MS)
    return p.latest_tag;
  return null;
}

export function serializePlugin(p: PluginWithOrg): Plugin {
  return {
    id: p.id,
    plugin_type: p.plugin_type as Plugin['plugin_type'],
    name: p.name,
    description: p.description,
    url: p.url ? displayUrl(p.url) : null,
    icon: p.icon,
    config_schema: p.config_schema,
    tag: p.tag,
    latest_tag: latestTag(p),
    is_global: p.is_global,
    organization_id: p.organization_id,
    organization_name: p.organization_name ?? 'posthog-inline',
    capabilities: p.capabilities,
    metrics: p.metrics,
    public_jobs: p.public_jobs,
    hog_function_migration_available: false,
  };
}

/** Keys of the fields a plugin's `config_schema` marks secret (a list of fields, or an object keyed by field). */
export function secretFields(configSchema: unknown): Set<string> {
  const out = new Set<string>();
  if (Array.isArray(configSchema)) {
    for (const f of configSchema) {
      if (
        f &&
        typeof f === 'object' &&
        (f as { secret?: unknown }).secret &&
        typeof (f as { key?: unknown }).key === 'string'
      ) {
        out.add((f as { key: string }).key);
      }
    }
  } else if (configSchema && typeof configSchema === 'object') {
    for (const [key, f] of Object.entries(configSchema)) {
      if (f && typeof f === 'object' && (f as { secret?: unknown }).secret) out.add(key);
    }
  }
  return out;
}

export function maskConfig(config: Record<string, unknown>, secrets: Set<string>): Record<string, unknown> {
  const out = { ...config };
  for (const key of secrets) if (out[key]) out[key] = SECRET_FIELD_VALUE;
  return out;
}

export function serializePluginConfig(c: PluginConfigRow, plugin: PluginWithOrg, withInfo: boolean): PluginConfig {
  return {
    id: c.id,
    plugin: c.plugin_id,
    enabled: c.enabled,
    order: c.order,
    config: {
      ...maskConfig(c.config, secretFields(plugin.config_schema)),
      ...maskConfig(c.secrets, new Set(Object.keys(c.secrets))),
    },
    error: null,
    team_id: c.project_id,
    plugin_info: withInfo ? serializePlugin(plugin) : null,
    delivery_rate_24h: null,
    created_at: c.created_at.toISOString(),
    updated_at: c.updated_at.toISOString(),
    name: c.name || plugin.name,
    description: c.description || plugin.description,
    deleted: c.deleted,
  };
}

export function serializeActivity(a: ActivityRow, user: UserRow | undefined): ActivityLogEntry {
  return {
    id: a.id,
    user: user ? serializeUserBasic(user) : null,
    activity: a.activity as ActivityLogEntry['activity'],
    scope: a.scope as ActivityLogEntry['scope'],
    item_id: a.item_id,
    detail: a.detail as ActivityLogEntry['detail'],
    created_at: a.created_at.toISOString(),
  };
}
