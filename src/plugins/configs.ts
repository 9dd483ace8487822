// A project's plugin configs: who sees them, presenting them with their plugins, and creating,
// changing and deleting one with its activity and config log entries in one transaction.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
import type { ProjectTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import {
  getPluginConfig,
  insertPluginConfig,
  insertPluginLogs,
  listPluginLogs,
  logActivity,
  updatePluginConfig,
  type PluginConfigRow,
} from './config-queries.js';
import { getPluginsWithOrg, getPluginWithOrg, isPluginVisible, type PluginWithOrg } from './queries.js';
import type { SecretBox } from '../secrets/index.js';
import { serializePluginLog } from './log-serialize.js';
import { secretFields, serializePluginConfig } from './serialize.js';
import { PluginsAccess, pluginsAccessLevel } from './access.js';
import { configChanges, fieldChanges } from './changes.js';
import { configLogEntries } from './config-log.js';
import { allSettings, secretKeys, storeSettings } from './config-secrets.js';

type Schemas = components['schemas'];

const WRITABLE = ['enabled', 'order', 'config', 'name', 'description', 'deleted'] as const;
const LOGGED = ['enabled', 'order', 'name', 'description', 'deleted'] as const;

/** A config with the plugin it configures. */
export interface LoadedConfig {
  config: PluginConfigRow;
  plugin: PluginWithOrg;
}

/** Below the config level PostHog shows a project no plugin configs at all. */
export async function canConfigure(db: Db, organizationId: string): Promise<boolean> {
  return (await pluginsAccessLevel(db, organizationId)) >= PluginsAccess.CONFIG;
}

/** The project's config `id` with its plugin, or a 404 (also below the config level). */
export async function loadPluginConfig(db: Db, tenant: ProjectTenant, id: number): Promise<LoadedConfig> {
  if (!(await canConfigure(db, tenant.organization_id))) throw ApiError.notFound();
  const config = await getPluginConfig(db, tenant.project_id, id);
  if (!config) throw ApiError.notFound();
  return { config, plugin: (await getPluginWithOrg(db, config.plugin_id))! };
}

/** Configs with their plugins (one look-up for all); `full` as serializePluginConfig takes it. */
export async function presentPluginConfigs(db: Db, rows: PluginConfigRow[], full: boolean) {
  const plugins = await getPluginsWithOrg(
    db,
    rows.map((r) => r.plugin_id),
  );
  return rows.map((r) => serializePluginConfig(r, plugins.get(r.plugin_id)!, full));
}

export async function createPluginConfig(
  db: Db,
  box: SecretBox,
  tenant: ProjectTenant,
  userId: number,
  body: Schemas['PluginConfigRequest'],
): Promise<LoadedConfig> {
  if (!(await canConfigure(db, tenant.organization_id))) {
    throw ApiError.validation(null, 'Plugin configuration is not available for the current organization!');
  }
  const { plugin: pluginId } = body;
  if (!(await isPluginVisible(db, tenant.organization_id, pluginId))) {
    throw ApiError.validation('plugin', `Invalid pk "${pluginId}" - object does not exist.`, 'does_not_exist');
  }
  const plugin = (await getPluginWithOrg(db, pluginId))!;
  const { config: settings, ...values } = pick(body, WRITABLE);
  if (values.deleted) values.enabled = false;
  const stored = storeSettings(box, settings ?? {}, { config: {}, secrets: {} }, secretFields(plugin.config_schema));
  const config = await db.transaction(async (tx) => {
    const row = await insertPluginConfig(tx, {
      ...values,
      ...stored,
      order: body.order,
      plugin_id: pluginId,
      project_id: tenant.project_id,
    });
    await logActivity(tx, {
      organization_id: tenant.organization_id,
      project_id: row.project_id,
      user_id: userId,
      activity: 'created',
      scope: 'PluginConfig',
      item_id: row.id,
      detail: { name: plugin.name, changes: null },
    });
    await insertPluginLogs(tx, configLogEntries(null, row, []));
    return row;
  });
  return { config, plugin };
}

export async function changePluginConfig(
  db: Db,
  box: SecretBox,
  tenant: ProjectTenant,
  userId: number,
  { config, plugin }: LoadedConfig,
  body: Schemas['PatchedPluginConfigRequest'] | undefined,
): Promise<PluginConfigRow> {
  const { config: settings, ...values } = pick(body, WRITABLE);
  if (values.deleted) values.enabled = false;
  const schemaSecrets = secretFields(plugin.config_schema);
  const stored = settings ? storeSettings(box, settings, config, schemaSecrets) : {};
  return db.transaction(async (tx) => {
    const row = await updatePluginConfig(tx, tenant.project_id, config.id, { ...values, ...stored });
    if (!row) throw ApiError.notFound();
    const settingChanges = configChanges(
      allSettings(config),
      allSettings(row),
      new Set([...secretKeys(config, schemaSecrets), ...secretKeys(row, schemaSecrets)]),
    );
    const changes = [...fieldChanges('PluginConfig', config, row, LOGGED), ...settingChanges];
    await insertPluginLogs(
      tx,
      configLogEntries(
        config,
        row,
        settingChanges.map((c) => c.field!.replace(/^config\./, '')),
      ),
    );
    if (changes.length) {
      await logActivity(tx, {
        organization_id: tenant.organization_id,
        project_id: row.project_id,
        user_id: userId,
        activity: 'updated',
        scope: 'PluginConfig',
        item_id: row.id,
        detail: { name: plugin.name, changes },
      });
    }
    return row;
  });
}

/** As PostHog: the config is switched off and hidden, not removed. */
export async function deletePluginConfig(
  db: Db,
  tenant: ProjectTenant,
  userId: number,
  { config, plugin }: LoadedConfig,
): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await updatePluginConfig(tx, tenant.project_id, config.id, { enabled: false, deleted: true });
    if (!row) throw ApiError.notFound();
    await insertPluginLogs(tx, configLogEntries(config, row, []));
    await logActivity(tx, {
      organization_id: tenant.organization_id,
      project_id: config.project_id,
      user_id: userId,
      activity: 'deleted',
      scope: 'PluginConfig',
      item_id: config.id,
      detail: { name: plugin.name, changes: null },
    });
  });
}

export interface PluginLogQuery {
  type_filter?: string[];
  search?: string;
  after?: string;
  before?: string;
}

/** A page of the config's log entries, serialized. */
export async function pluginConfigLogs(
  db: Db,
  config: PluginConfigRow,
  q: PluginLogQuery,
  page: { limit: number; offset: number },
) {
  const types = (q.type_filter ?? [])
    .flatMap((t) => t.split(','))
    .map((t) => t.trim().toUpperCase())
    .filter(Boolean);
  const { count, rows } = await listPluginLogs(
    db,
    config.project_id,
    config.id,
    {
      types,
      ...(q.search ? { search: q.search } : {}),
      ...(q.after ? { after: q.after } : {}),
      ...(q.before ? { before: q.before } : {}),
    },
    page,
  );
  return { count, results: rows.map(serializePluginLog) };
}
