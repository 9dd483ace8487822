import type { FastifyRequest } from 'fastify';
import { activityPage, exportConfigs } from './config-queries.js';
import { getSourceFiles, unusedPluginIds, type Family } from './queries.js';
import type { Handler } from '../http/types.js';
import { loadOwnForReading, loadOwnForWriting, PluginsAccess, requirePluginsAccess } from './access.js';
import { presentPluginConfigs } from './configs.js';
import { checkForUpdates, repositoryList, updateSource, upgradePlugin } from './install.js';
import { serializeActivity, serializePlugin } from './serialize.js';
import { activityLogPage } from '../http/activity-log.js';
import { actorOf } from './crud-handlers.js';

const access = (req: FastifyRequest, min: number) =>
  requirePluginsAccess(req.server.db, req.tenant.organization_id, min);

export function actionHandlers(family: Family) {
  return {
    async check_for_updates_retrieve(req) {
      const { db, config } = req.server;
      const orgId = req.tenant.organization_id;
      const plugin = await loadOwnForReading(db, orgId, family, req.params.id, 'installation');
      return { plugin: serializePlugin(await checkForUpdates(db, config, orgId, plugin)) };
    },

    async source_retrieve(req) {
      const { db } = req.server;
      const plugin = await loadOwnForReading(db, req.tenant.organization_id, family, req.params.id, 'source editing');
      return getSourceFiles(db, plugin.id);
    },

    async update_source_partial_update(req) {
      const plugin = await loadOwnForWriting(req.server.db, req.tenant.organization_id, family, req.params.id);
      return updateSource(req.server.db, actorOf(req), plugin, req.body);
    },

    async upgrade_create(req) {
      const plugin = await loadOwnForWriting(req.server.db, req.tenant.organization_id, family, req.params.id);
      return serializePlugin(await upgradePlugin(req.server.db, req.server.config, actorOf(req), plugin));
    },

    async activity_retrieve(req) {
      await access(req, PluginsAccess.CONFIG);
      return activityLogPage(
        req,
        req.query,
        (limit, page) => activityPage(req.server.db, req.tenant.organization_id, limit, page),
        serializeActivity,
      );
    },

    async exports_unsubscribe_configs_retrieve(req) {
      await access(req, PluginsAccess.CONFIG);
      const configs = await exportConfigs(req.server.db, req.tenant.organization_id);
      return presentPluginConfigs(req.server.db, configs, true);
    },

    async repository_retrieve(req) {
      await access(req, PluginsAccess.CONFIG);
      return repositoryList(req.server.config);
    },

    async unused_retrieve(req) {
      await access(req, PluginsAccess.CONFIG);
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
