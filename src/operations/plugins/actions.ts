import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import type { Handler } from '../../http/types.js';
import type { Db } from '../../db/client.js';
import {
  getPluginWithOrg,
  getPluginsWithOrg,
  getSourceFiles,
  replaceSourceFiles,
  unusedPluginIds,
  updatePlugin,
  writeSourceFiles,
  type Family,
  type PluginInsert,
  type PluginWithOrg,
} from '../../db/queries/plugins.js';
import { activityPage, exportConfigs, logActivity } from '../../db/queries/plugin-configs.js';
import { serializeActivity, serializePlugin, serializePluginConfig } from '../../serializers/plugins.js';
import { download } from '../../plugins/archive.js';
import { capabilitiesOf } from '../../plugins/capabilities.js';
import { isHttpUrl, parsePluginJson } from '../../plugins/package.js';
import { fieldChanges, fileChanges } from '../../plugins/changes.js';
import { activityLogPage } from '../activity-log.js';
import { orBadRequest, ownedOrNotFound, PluginsAccess, requireOwned, requirePluginsAccess } from './access.js';
import { fetchPackage, loadPlugin, packageColumns, PLUGIN_LOGGED } from './crud.js';

const FILENAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;

/**
 * check_for_updates and source read only the caller's own plugins (another organization's is a 404)
 * and need the install level, with PostHog's reason in the refusal.
 */
async function loadOwnForReading(req: FastifyRequest, family: Family, id: number, reason: string) {
  const level = await requirePluginsAccess(req, PluginsAccess.CONFIG);
  const plugin = await loadPlugin(req, family, id);
  if (plugin.organization_id !== req.tenant.organization_id) throw ApiError.notFound();
  if (level < PluginsAccess.INSTALL) {
    throw ApiError.permissionDenied(`Plugin ${reason} is not available for the current organization!`);
  }
  return plugin;
}

async function loadOwnForWriting(req: FastifyRequest, family: Family, id: number) {
  await requirePluginsAccess(req, PluginsAccess.INSTALL);
  const plugin = await loadPlugin(req, family, id);
  requireOwned(req, plugin);
  return plugin;
}

function hasArchiveUrl(plugin: PluginWithOrg): plugin is PluginWithOrg & { url: string } {
  return (
    (plugin.plugin_type === 'custom' || plugin.plugin_type === 'repository') && !!plugin.url && isHttpUrl(plugin.url)
  );
}

/** What editing the files changes on the plugin: name and settings from plugin.json, capabilities from index.ts. */
async function sourceEffects(
  plugin: PluginWithOrg,
  changes: Record<string, string | null>,
  after: Record<string, string>,
) {
  const values: Partial<PluginInsert> = {};
  if (typeof changes['plugin.json'] === 'string') {
    const json = await orBadRequest('plugin.json', async () => parsePluginJson(changes['plugin.json']!));
    if (typeof json.name === 'string' && json.name !== plugin.name) values.name = json.name;
    if (json.config !== undefined) values.config_schema = json.config;
  }
  if ('index.ts' in changes) {
    values.capabilities =
      after['index.ts'] === undefined
        ? {}
        : await orBadRequest('index.ts', () => capabilitiesOf('index.ts', after['index.ts']!));
  }
  return values;
}

export function actionHandlers(family: Family) {
  return {
    async check_for_updates_retrieve(req) {
      const plugin = await loadOwnForReading(req, family, req.params.id, 'installation');
      if (!hasArchiveUrl(plugin)) {
        throw ApiError.validation(null, 'Only plugins installed from an http(s) url can be checked for updates.');
      }
      const pkg = await fetchPackage(req, plugin.url, null);
      // Answered from the transaction that wrote it, so an error answer means nothing was recorded.
      const checked = await req.server.db.transaction(async (tx) => {
        const values = { latest_tag: pkg.tag, latest_tag_checked_at: new Date() };
        await ownedOrNotFound(updatePlugin(tx, req.tenant.organization_id, plugin.id, values));
        return getPluginWithOrg(tx as Db, plugin.id);
      });
      return { plugin: serializePlugin(checked!) };
    },

    async source_retrieve(req) {
      const plugin = await loadOwnForReading(req, family, req.params.id, 'source editing');
      return getSourceFiles(req.server.db, plugin.id);
    },

    async update_source_partial_update(req) {
      const plugin = await loadOwnForWriting(req, family, req.params.id);
      const changes = req.body;
      for (const name of Object.keys(changes)) {
        if (!FILENAME.test(name)) {
          throw ApiError.validation(name, 'A file name is 1 to 200 letters, digits, ".", "_" or "-".');
        }
      }
      const before = await getSourceFiles(req.server.db, plugin.id);
      const after = { ...before };
      for (const [name, source] of Object.entries(changes)) {
        if (source === null || source === undefined) delete after[name];
        else after[name] = source;
      }
      const values = await sourceEffects(plugin, changes as Record<string, string | null>, after);
      const changed = fileChanges(before, after);
      if (!changed.length && !Object.keys(values).length) return before;
      // The files answered are read in the transaction that wrote them (an error answer means nothing changed).
      return req.server.db.transaction(async (tx) => {
        await ownedOrNotFound(
          writeSourceFiles(tx, req.tenant.organization_id, plugin.id, changes as Record<string, string | null>),
        );
        const updated = await ownedOrNotFound(updatePlugin(tx, req.tenant.organization_id, plugin.id, values));
        const changes_ = [...fieldChanges('Plugin', plugin, updated, PLUGIN_LOGGED), ...changed];
        if (changes_.length) {
          await logActivity(tx, {
            organization_id: req.tenant.organization_id,
            user_id: req.principal.user.id,
            activity: 'updated',
            scope: 'Plugin',
            item_id: plugin.id,
            detail: { name: updated.name, changes: changes_ },
          });
        }
        return getSourceFiles(tx as Db, plugin.id);
      });
    },

    async upgrade_create(req) {
      const plugin = await loadOwnForWriting(req, family, req.params.id);
      // PostHog leaves source and local plugins as they are.
      if (!hasArchiveUrl(plugin)) return serializePlugin(plugin);
      const pkg = await fetchPackage(req, plugin.url, null);
      const before = await getSourceFiles(req.server.db, plugin.id);
      const upgraded = await req.server.db.transaction(async (tx) => {
        const updated = await ownedOrNotFound(
          updatePlugin(tx, req.tenant.organization_id, plugin.id, packageColumns(pkg)),
        );
        await ownedOrNotFound(replaceSourceFiles(tx, req.tenant.organization_id, plugin.id, pkg.files));
        const changes = [...fieldChanges('Plugin', plugin, updated, PLUGIN_LOGGED), ...fileChanges(before, pkg.files)];
        if (changes.length) {
          await logActivity(tx, {
            organization_id: req.tenant.organization_id,
            user_id: req.principal.user.id,
            activity: 'updated',
            scope: 'Plugin',
            item_id: plugin.id,
            detail: { name: updated.name, changes },
          });
        }
        return getPluginWithOrg(tx as Db, plugin.id);
      });
      return serializePlugin(upgraded!);
    },

    async activity_retrieve(req) {
      await requirePluginsAccess(req, PluginsAccess.CONFIG);
      return activityLogPage(
        req,
        req.query,
        (limit, page) => activityPage(req.server.db, req.tenant.organization_id, limit, page),
        serializeActivity,
      );
    },

    async exports_unsubscribe_configs_retrieve(req) {
      await requirePluginsAccess(req, PluginsAccess.CONFIG);
      const configs = await exportConfigs(req.server.db, req.tenant.organization_id);
      const plugins = await getPluginsWithOrg(
        req.server.db,
        configs.map((c) => c.plugin_id),
      );
      return configs.map((c) => serializePluginConfig(c, plugins.get(c.plugin_id)!, true));
    },

    async repository_retrieve(req) {
      await requirePluginsAccess(req, PluginsAccess.CONFIG);
      const url = req.server.config.pluginRepositoryUrl;
      if (!url) {
        throw ApiError.validation(
          null,
          'The plugin repository is not configured on this server (set PLUGIN_REPOSITORY_URL).',
        );
      }
      const body = await orBadRequest(null, () =>
        download(url, req.server.config.pluginArchiveMaxBytes, 'the plugin repository'),
      );
      let list: unknown;
      try {
        list = JSON.parse(body.toString('utf8'));
      } catch {
        list = undefined;
      }
      if (!Array.isArray(list) || !list.every((e) => e && typeof e === 'object' && !Array.isArray(e))) {
        throw ApiError.validation(
          null,
          `The plugin repository at ${url.split('?')[0]} did not answer with a JSON list of plugins.`,
        );
      }
      return list as Record<string, unknown>[];
    },

    async unused_retrieve(req) {
      await requirePluginsAccess(req, PluginsAccess.CONFIG);
      return unusedPluginIds(req.server.db, req.tenant.organization_id, family);
    },
  } satisfies {
    check_for_updates_retrieve: Handler<'pipeline_destinations_check_for_updates_retrieve'>;
    source_retrieve: Handler<'pipeline_destinations_source_retrieve'>;
    update_source_partial_update: Handler<'pipeline_destinations_update_source_partial_update'>;
    upgrade_create: Handler<'pipeline_destinations_upgrade_create'>;
    activity_retrieve: Handler<'pipeline_destinations_activity_retrieve'>;
    exports_unsubscribe_configs_retrieve: Handler<'pipeline_destinations_exports_unsubscribe_configs_retrieve'>;
    repository_retrieve: Handler<'pipeline_destinations_repository_retrieve'>;
    unused_retrieve: Handler<'pipeline_destinations_unused_retrieve'>;
  };
}
