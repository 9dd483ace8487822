import type { FastifyRequest } from 'fastify';
import { pageOf } from '../core/paging.js';
import { listPlugins, type Family } from './queries.js';
import { paginated } from '../http/pagination.js';
import type { Handler } from '../http/types.js';
import { loadPlugin, PluginsAccess, requireOwned, requirePluginsAccess } from './access.js';
import { changePlugin, installPlugin, uninstallPlugin, type PluginActor } from './install.js';
import { serializePlugin } from './serialize.js';

/** The caller's organization and user, as plugin writes log them. */
export const actorOf = (req: FastifyRequest): PluginActor => ({
  organizationId: req.tenant.organization_id,
  userId: req.principal.user.id,
});

const access = (req: FastifyRequest, min: number) =>
  requirePluginsAccess(req.server.db, req.tenant.organization_id, min);

export function crudHandlers(family: Family) {
  return {
    async list(req) {
      await access(req, PluginsAccess.CONFIG);
      const page = pageOf(req.query);
      const { count, rows } = await listPlugins(req.server.db, req.tenant.organization_id, family, page);
      return paginated(req, page, count, rows.map(serializePlugin));
    },

    async create(req, reply) {
      const level = await access(req, PluginsAccess.INSTALL);
      const created = await installPlugin(req.server.db, req.server.config, actorOf(req), level, req.body);
      reply.code(201);
      return serializePlugin(created);
    },

    async retrieve(req) {
      await access(req, PluginsAccess.CONFIG);
      return serializePlugin(await loadPlugin(req.server.db, req.tenant.organization_id, family, req.params.id));
    },

    async partial_update(req) {
      const level = await access(req, PluginsAccess.INSTALL);
      const plugin = await loadPlugin(req.server.db, req.tenant.organization_id, family, req.params.id);
      requireOwned(req.tenant.organization_id, plugin);
      return serializePlugin(await changePlugin(req.server.db, actorOf(req), level, plugin, req.body));
    },

    async destroy(req, reply) {
      await access(req, PluginsAccess.INSTALL);
      const plugin = await loadPlugin(req.server.db, req.tenant.organization_id, family, req.params.id);
      requireOwned(req.tenant.organization_id, plugin);
      await uninstallPlugin(req.server.db, actorOf(req), plugin);
      reply.code(204);
    },
  } satisfies {
    list: Handler<'pipeline_destinations_list'>;
    create: Handler<'pipeline_destinations_create'>;
    retrieve: Handler<'pipeline_destinations_retrieve'>;
    partial_update: Handler<'pipeline_destinations_partial_update'>;
    destroy: Handler<'pipeline_destinations_destroy'>;
  };
}
