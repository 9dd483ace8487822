import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import { listPluginConfigs } from './config-queries.js';
import {
  canConfigure,
  changePluginConfig,
  createPluginConfig,
  deletePluginConfig,
  loadPluginConfig,
  pluginConfigLogs,
  presentPluginConfigs,
} from './configs.js';
import { secretBox } from '../secrets/index.js';
import { serializePluginConfig } from './serialize.js';

const pathConfig = (req: ProjectRequest & FastifyRequest<{ Params: { id: number } }>) =>
  loadPluginConfig(req.server.db, req.tenant, req.params.id);

export const pluginConfigHandlers = {
  async plugin_configs_list(req) {
    const page = pageOf(req.query);
    if (!(await canConfigure(req.server.db, req.tenant.organization_id))) return paginated(req, page, 0, []);
    const { count, rows } = await listPluginConfigs(req.server.db, req.tenant.project_id, page);
    return paginated(req, page, count, await presentPluginConfigs(req.server.db, rows, false));
  },

  async plugin_configs_create(req, reply) {
    const box = secretBox(req.server.config);
    const { config, plugin } = await createPluginConfig(
      req.server.db,
      box,
      req.tenant,
      req.principal.user.id,
      req.body,
    );
    reply.code(201);
    return serializePluginConfig(config, plugin, true);
  },

  async plugin_configs_retrieve(req) {
    const { config, plugin } = await pathConfig(req);
    return serializePluginConfig(config, plugin, true);
  },

  async plugin_configs_partial_update(req) {
    const loaded = await pathConfig(req);
    const box = secretBox(req.server.config);
    const row = await changePluginConfig(req.server.db, box, req.tenant, req.principal.user.id, loaded, req.body);
    return serializePluginConfig(row, loaded.plugin, true);
  },

  async plugin_configs_destroy(req, reply) {
    const loaded = await pathConfig(req);
    await deletePluginConfig(req.server.db, req.tenant, req.principal.user.id, loaded);
    reply.code(204);
  },

  async plugin_configs_logs_list(req) {
    const { config } = await pathConfig(req);
    const page = pageOf(req.query);
    const { count, results } = await pluginConfigLogs(req.server.db, config, req.query ?? {}, page);
    return paginated(req, page, count, results);
  },
} satisfies SomeHandlers;
