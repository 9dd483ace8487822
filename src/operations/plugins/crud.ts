import type { Db } from '../../db/client.js';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import { pick } from '../../core/pick.js';
import { paginated } from '../../http/pagination.js';
import { pageOf } from '../../core/paging.js';
import type { Handler } from '../../http/types.js';
import {
  deletePlugin,
  getPluginWithOrg,
  getVisiblePlugin,
  insertPlugin,
  listPlugins,
  replaceSourceFiles,
  updatePlugin,
  urlInstalled,
  type Family,
  type PluginInsert,
} from '../../db/queries/plugins.js';
import { logActivity } from '../../db/queries/plugin-configs.js';
import { sqlState } from '../../core/sql-state.js';
import { serializePlugin } from '../../serializers/plugins.js';
import { displayUrl } from '../../plugins/archive.js';
import { networkPolicy } from '../../net/index.js';
import { isHttpUrl, packageFromFolder, packageFromUrl, type PluginPackage } from '../../plugins/package.js';
import { fieldChanges } from '../../plugins/changes.js';
import { orBadRequest, ownedOrNotFound, PluginsAccess, requireOwned, requirePluginsAccess } from './access.js';

/** Fields a client may set on a plugin; `plugin_type` and `url` only at installation. */
export const PLUGIN_WRITABLE = [
  'name',
  'description',
  'icon',
  'config_schema',
  'tag',
  'is_global',
  'capabilities',
  'metrics',
  'public_jobs',
] as const;

/** Fields whose changes the activity log records. */
export const PLUGIN_LOGGED = [...PLUGIN_WRITABLE, 'plugin_type', 'url', 'latest_tag'] as const;

const GLOBAL_REFUSED = "This organization can't manage global plugins!";

/** The plugin as the family shows it to the caller's organization, else a 404. */
export async function loadPlugin(req: FastifyRequest, family: Family, id: number) {
  const plugin = await getVisiblePlugin(req.server.db, req.tenant.organization_id, family, id);
  if (!plugin) throw ApiError.notFound();
  return plugin;
}

/** Downloads or reads what a url-installed plugin is made of; any problem is a 400 on `attr`. */
export function fetchPackage(req: FastifyRequest, url: string, attr: string | null): Promise<PluginPackage> {
  const { pluginArchiveMaxBytes: max, pluginLocalDir, allowPrivateNetworks } = req.server.config;
  const policy = networkPolicy(allowPrivateNetworks);
  return orBadRequest(attr, () =>
    url.startsWith('file:') ? packageFromFolder(url, pluginLocalDir, max) : packageFromUrl(url, max, policy),
  );
}

/** Column values taken from a package on install and upgrade. */
export function packageColumns(pkg: PluginPackage): Partial<PluginInsert> {
  return {
    name: pkg.name,
    description: pkg.description,
    icon: pkg.icon,
    config_schema: pkg.config_schema,
    public_jobs: pkg.public_jobs,
    capabilities: pkg.capabilities,
    tag: pkg.tag,
    latest_tag: pkg.tag,
  };
}

/** What a create request installs: a `source` plugin from the body, anything else from its url. */
async function installValues(
  req: RequestCreate,
  organizationId: string,
): Promise<{ values: PluginInsert; files: Record<string, string> }> {
  const body = req.body;
  const given = pick(body, PLUGIN_WRITABLE);
  if (body.plugin_type === 'inline') {
    throw ApiError.validation('plugin_type', 'Inline plugins ship with the server and cannot be installed.');
  }
  if (body.plugin_type === 'source') {
    return { values: { ...given, plugin_type: 'source', organization_id: organizationId }, files: {} };
  }
  const url = body.url?.trim();
  if (!url) throw ApiError.required('url');
  const local = url.startsWith('file:');
  if (!local && !isHttpUrl(url)) {
    throw ApiError.validation(
      'url',
      'Must be an http(s) url of a plugin archive, or a file: folder for a local plugin.',
    );
  }
  if (await urlInstalled(req.server.db, organizationId, displayUrl(url))) {
    throw ApiError.validation(null, `Plugin from URL "${displayUrl(url)}" already installed!`);
  }
  const pkg = await fetchPackage(req, url, 'url');
  const plugin_type = local ? 'local' : body.plugin_type === 'repository' ? 'repository' : 'custom';
  const values: PluginInsert = {
    ...pick(given, ['is_global', 'metrics'] as const),
    ...packageColumns(pkg),
    ...(local ? { tag: null, latest_tag: null } : {}),
    plugin_type,
    url,
    organization_id: organizationId,
  };
  return { values, files: pkg.files };
}

type RequestCreate = Parameters<Handler<'pipeline_destinations_create'>>[0];

export function crudHandlers(family: Family) {
  return {
    async list(req) {
      await requirePluginsAccess(req, PluginsAccess.CONFIG);
      const page = pageOf(req.query);
      const { count, rows } = await listPlugins(req.server.db, req.tenant.organization_id, family, page);
      return paginated(req, page, count, rows.map(serializePlugin));
    },

    async create(req, reply) {
      const level = await requirePluginsAccess(req, PluginsAccess.INSTALL);
      if (req.body.is_global && level < PluginsAccess.ROOT) throw ApiError.permissionDenied(GLOBAL_REFUSED);
      const organizationId = req.tenant.organization_id;
      const { values, files } = await installValues(req, organizationId);
      let created: Awaited<ReturnType<typeof getPluginWithOrg>>;
      try {
        // The answer is read in the transaction that wrote it, so an error answer means nothing was installed.
        created = await req.server.db.transaction(async (tx) => {
          const plugin = await insertPlugin(tx, values);
          await ownedOrNotFound(replaceSourceFiles(tx, organizationId, plugin.id, files));
          await logActivity(tx, {
            organization_id: organizationId,
            user_id: req.principal.user.id,
            activity: 'created',
            scope: 'Plugin',
            item_id: plugin.id,
            detail: { name: plugin.name, changes: null },
          });
          return getPluginWithOrg(tx as Db, plugin.id);
        });
      } catch (err) {
        // Two installs of one url racing: the unique (organization, url) index stops the second.
        if (sqlState(err) === '23505') {
          throw ApiError.validation(null, `Plugin from URL "${displayUrl(values.url ?? '')}" already installed!`);
        }
        throw err;
      }
      reply.code(201);
      return serializePlugin(created!);
    },

    async retrieve(req) {
      await requirePluginsAccess(req, PluginsAccess.CONFIG);
      return serializePlugin(await loadPlugin(req, family, req.params.id));
    },

    async partial_update(req) {
      const level = await requirePluginsAccess(req, PluginsAccess.INSTALL);
      const plugin = await loadPlugin(req, family, req.params.id);
      requireOwned(req, plugin);
      if (req.body && 'is_global' in req.body && level < PluginsAccess.ROOT)
        throw ApiError.permissionDenied(GLOBAL_REFUSED);
      const values = pick(req.body, PLUGIN_WRITABLE);
      if (Object.keys(values).length) {
        const saved = await req.server.db.transaction(async (tx) => {
          const updated = await ownedOrNotFound(updatePlugin(tx, req.tenant.organization_id, plugin.id, values));
          const changes = fieldChanges('Plugin', plugin, updated, PLUGIN_LOGGED);
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
        return serializePlugin(saved!);
      }
      return serializePlugin((await getPluginWithOrg(req.server.db, plugin.id))!);
    },

    async destroy(req, reply) {
      await requirePluginsAccess(req, PluginsAccess.INSTALL);
      const plugin = await loadPlugin(req, family, req.params.id);
      requireOwned(req, plugin);
      if (plugin.is_global) {
        throw ApiError.validation(null, 'This plugin is marked as global! Make it local before uninstallation');
      }
      await req.server.db.transaction(async (tx) => {
        await logActivity(tx, {
          organization_id: req.tenant.organization_id,
          user_id: req.principal.user.id,
          activity: 'deleted',
          scope: 'Plugin',
          item_id: plugin.id,
          detail: { name: plugin.name, changes: null },
        });
        await ownedOrNotFound(deletePlugin(tx, req.tenant.organization_id, plugin.id));
      });
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
