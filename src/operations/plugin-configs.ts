import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import { getPluginWithOrg, getPluginsWithOrg, isPluginVisible, type PluginWithOrg } from '../db/queries/plugins.js';
import {
  getPluginConfig,
  insertPluginConfig,
  insertPluginLogs,
  listPluginConfigs,
  listPluginLogs,
  logActivity,
  updatePluginConfig,
  type PluginConfigRow,
} from '../db/queries/plugin-configs.js';
import { secretFields, serializePluginConfig } from '../serializers/plugins.js';
import { allSettings, secretKeys, storeSettings } from '../plugins/config-secrets.js';
import { secretBox } from '../secrets/index.js';
import { configChanges, fieldChanges } from '../plugins/changes.js';
import { configLogEntries } from '../plugins/config-log.js';
import { serializePluginLog } from '../serializers/plugin-logs.js';
import { PluginsAccess, pluginsAccessLevel } from './plugins/access.js';

const WRITABLE = ['enabled', 'order', 'config', 'name', 'description', 'deleted'] as const;
const LOGGED = ['enabled', 'order', 'name', 'description', 'deleted'] as const;

/** Below the config level PostHog shows a project no plugin configs at all. */
async function canConfigure(req: FastifyRequest): Promise<boolean> {
  return (await pluginsAccessLevel(req)) >= PluginsAccess.CONFIG;
}

async function loadConfig(
  req: ProjectRequest,
  id: number,
): Promise<{ config: PluginConfigRow; plugin: PluginWithOrg }> {
  if (!(await canConfigure(req))) throw ApiError.notFound();
  const config = await getPluginConfig(req.server.db, req.tenant.project_id, id);
  if (!config) throw ApiError.notFound();
  return { config, plugin: (await getPluginWithOrg(req.server.db, config.plugin_id))! };
}

export const pluginConfigHandlers = {
  async plugin_configs_list(req) {
    const page = pageOf(req.query);
    if (!(await canConfigure(req))) return paginated(req, page, 0, []);
    const { count, rows } = await listPluginConfigs(req.server.db, req.tenant.project_id, page);
    const plugins = await getPluginsWithOrg(
      req.server.db,
      rows.map((r) => r.plugin_id),
    );
    return paginated(
      req,
      page,
      count,
      rows.map((r) => serializePluginConfig(r, plugins.get(r.plugin_id)!, false)),
    );
  },

  async plugin_configs_create(req, reply) {
    if (!(await canConfigure(req))) {
      throw ApiError.validation(null, 'Plugin configuration is not available for the current organization!');
    }
    const { plugin: pluginId } = req.body;
    if (!(await isPluginVisible(req.server.db, req.tenant.organization_id, pluginId))) {
      throw ApiError.validation('plugin', `Invalid pk "${pluginId}" - object does not exist.`, 'does_not_exist');
    }
    const plugin = (await getPluginWithOrg(req.server.db, pluginId))!;
    const { config: settings, ...values } = pick(req.body, WRITABLE);
    if (values.deleted) values.enabled = false;
    const stored = storeSettings(
      secretBox(req.server.config),
      settings ?? {},
      { config: {}, secrets: {} },
      secretFields(plugin.config_schema),
    );
    const config = await req.server.db.transaction(async (tx) => {
      const row = await insertPluginConfig(tx, {
        ...values,
        ...stored,
        order: req.body.order,
        plugin_id: pluginId,
        project_id: req.tenant.project_id,
      });
      await logActivity(tx, {
        organization_id: req.tenant.organization_id,
        project_id: row.project_id,
        user_id: req.principal.user.id,
        activity: 'created',
        scope: 'PluginConfig',
        item_id: row.id,
        detail: { name: plugin.name, changes: null },
      });
      await insertPluginLogs(tx, configLogEntries(null, row, []));
      return row;
    });
    reply.code(201);
    return serializePluginConfig(config, plugin, true);
  },

  async plugin_configs_retrieve(req) {
    const { config, plugin } = await loadConfig(req, req.params.id);
    return serializePluginConfig(config, plugin, true);
  },

  async plugin_configs_partial_update(req) {
    const { config, plugin } = await loadConfig(req, req.params.id);
    const { config: settings, ...values } = pick(req.body, WRITABLE);
    if (values.deleted) values.enabled = false;
    const schemaSecrets = secretFields(plugin.config_schema);
    const stored = settings ? storeSettings(secretBox(req.server.config), settings, config, schemaSecrets) : {};
    const updated = await req.server.db.transaction(async (tx) => {
      const row = await updatePluginConfig(tx, req.tenant.project_id, config.id, { ...values, ...stored });
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
          organization_id: req.tenant.organization_id,
          project_id: row.project_id,
          user_id: req.principal.user.id,
          activity: 'updated',
          scope: 'PluginConfig',
          item_id: row.id,
          detail: { name: plugin.name, changes },
        });
      }
      return row;
    });
    return serializePluginConfig(updated, plugin, true);
  },

  async plugin_configs_destroy(req, reply) {
    const { config, plugin } = await loadConfig(req, req.params.id);
    // As PostHog: the config is switched off and hidden, not removed.
    await req.server.db.transaction(async (tx) => {
      const row = await updatePluginConfig(tx, req.tenant.project_id, config.id, { enabled: false, deleted: true });
      if (!row) throw ApiError.notFound();
      await insertPluginLogs(tx, configLogEntries(config, row, []));
      await logActivity(tx, {
        organization_id: req.tenant.organization_id,
        project_id: config.project_id,
        user_id: req.principal.user.id,
        activity: 'deleted',
        scope: 'PluginConfig',
        item_id: config.id,
        detail: { name: plugin.name, changes: null },
      });
    });
    reply.code(204);
  },

  async plugin_configs_logs_list(req) {
    const { config } = await loadConfig(req, req.params.id);
    const page = pageOf(req.query);
    const q = req.query ?? {};
    const types = (q.type_filter ?? [])
      .flatMap((t) => t.split(','))
      .map((t) => t.trim().toUpperCase())
      .filter(Boolean);
    const { count, rows } = await listPluginLogs(
      req.server.db,
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
    return paginated(req, page, count, rows.map(serializePluginLog));
  },
} satisfies SomeHandlers;
