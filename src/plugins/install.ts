// Installing, changing, upgrading and uninstalling an organization's plugins, each write with its
// activity log entry in one transaction, answered from what that transaction wrote.
import type { components } from '../../generated/api.js';
import type { Config } from '../config.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
import { sqlState } from '../core/sql-state.js';
import type { Db } from '../db/client.js';
import { logActivity } from './config-queries.js';
import {
  deletePlugin,
  getPluginWithOrg,
  getSourceFiles,
  insertPlugin,
  replaceSourceFiles,
  updatePlugin,
  urlInstalled,
  writeSourceFiles,
  type PluginInsert,
  type PluginWithOrg,
} from './queries.js';
import { networkPolicy } from '../net/index.js';
import { ownedOrNotFound, orBadRequest, PluginsAccess } from './access.js';
import { displayUrl, download } from './archive.js';
import { capabilitiesOf } from './capabilities.js';
import { fieldChanges, fileChanges } from './changes.js';
import { isHttpUrl, packageFromFolder, packageFromUrl, parsePluginJson, type PluginPackage } from './package.js';

type Schemas = components['schemas'];

/** Who acts: their organization and user, as the activity log records them. */
export interface PluginActor {
  organizationId: string;
  userId: number;
}

/**
 * The plugin's entry in the organization's activity log, in the transaction of the change; an
 * update that changed nothing logs nothing.
 */
async function logPlugin(
  tx: Db,
  actor: PluginActor,
  activity: 'created' | 'updated' | 'deleted',
  id: number,
  name: string | null,
  changes: ReturnType<typeof fieldChanges> | null,
): Promise<void> {
  if (changes && !changes.length) return;
  await logActivity(tx, {
    organization_id: actor.organizationId,
    user_id: actor.userId,
    activity,
    scope: 'Plugin',
    item_id: id,
    detail: { name, changes },
  });
}

/** Fields a client may set on a plugin; `plugin_type` and `url` only at installation. */
const PLUGIN_WRITABLE = [
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
const PLUGIN_LOGGED = [...PLUGIN_WRITABLE, 'plugin_type', 'url', 'latest_tag'] as const;

const GLOBAL_REFUSED = "This organization can't manage global plugins!";

const FILENAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;

type PluginConfig = Pick<Config, 'pluginArchiveMaxBytes' | 'pluginLocalDir' | 'allowPrivateNetworks'>;

/** Downloads or reads what a url-installed plugin is made of; any problem is a 400 on `attr`. */
function fetchPackage(config: PluginConfig, url: string, attr: string | null): Promise<PluginPackage> {
  const { pluginArchiveMaxBytes: max, pluginLocalDir, allowPrivateNetworks } = config;
  const policy = networkPolicy(allowPrivateNetworks);
  return orBadRequest(attr, () =>
    url.startsWith('file:') ? packageFromFolder(url, pluginLocalDir, max) : packageFromUrl(url, max, policy),
  );
}

/** Column values taken from a package on install and upgrade. */
function packageColumns(pkg: PluginPackage): Partial<PluginInsert> {
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
  db: Db,
  config: PluginConfig,
  organizationId: string,
  body: Schemas['PluginRequest'],
): Promise<{ values: PluginInsert; files: Record<string, string> }> {
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
  if (await urlInstalled(db, organizationId, displayUrl(url))) {
    throw ApiError.validation(null, `Plugin from URL "${displayUrl(url)}" already installed!`);
  }
  const pkg = await fetchPackage(config, url, 'url');
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

/** Installs a plugin; `level` is the organization's plugins access level (global plugins need ROOT). */
export async function installPlugin(
  db: Db,
  config: PluginConfig,
  actor: PluginActor,
  level: number,
  body: Schemas['PluginRequest'],
): Promise<PluginWithOrg> {
  if (body.is_global && level < PluginsAccess.ROOT) throw ApiError.permissionDenied(GLOBAL_REFUSED);
  const { organizationId } = actor;
  const { values, files } = await installValues(db, config, organizationId, body);
  let created: Awaited<ReturnType<typeof getPluginWithOrg>>;
  try {
    // The answer is read in the transaction that wrote it, so an error answer means nothing was installed.
    created = await db.transaction(async (tx) => {
      const plugin = await insertPlugin(tx, values);
      await ownedOrNotFound(replaceSourceFiles(tx, organizationId, plugin.id, files));
      await logPlugin(tx, actor, 'created', plugin.id, plugin.name, null);
      return getPluginWithOrg(tx, plugin.id);
    });
  } catch (err) {
    // Two installs of one url racing: the unique (organization, url) index stops the second.
    if (sqlState(err) === '23505') {
      throw ApiError.validation(null, `Plugin from URL "${displayUrl(values.url ?? '')}" already installed!`);
    }
    throw err;
  }
  return created!;
}

/** PATCH of the organization's own plugin; `level` as for installing. */
export async function changePlugin(
  db: Db,
  actor: PluginActor,
  level: number,
  plugin: PluginWithOrg,
  body: Schemas['PatchedPluginRequest'] | undefined,
): Promise<PluginWithOrg> {
  if (body && 'is_global' in body && level < PluginsAccess.ROOT) throw ApiError.permissionDenied(GLOBAL_REFUSED);
  const values = pick(body, PLUGIN_WRITABLE);
  if (!Object.keys(values).length) return (await getPluginWithOrg(db, plugin.id))!;
  const saved = await db.transaction(async (tx) => {
    const updated = await ownedOrNotFound(updatePlugin(tx, actor.organizationId, plugin.id, values));
    const changes = fieldChanges('Plugin', plugin, updated, PLUGIN_LOGGED);
    await logPlugin(tx, actor, 'updated', plugin.id, updated.name, changes);
    return getPluginWithOrg(tx, plugin.id);
  });
  return saved!;
}

export async function uninstallPlugin(db: Db, actor: PluginActor, plugin: PluginWithOrg): Promise<void> {
  if (plugin.is_global) {
    throw ApiError.validation(null, 'This plugin is marked as global! Make it local before uninstallation');
  }
  await db.transaction(async (tx) => {
    await logPlugin(tx, actor, 'deleted', plugin.id, plugin.name, null);
    await ownedOrNotFound(deletePlugin(tx, actor.organizationId, plugin.id));
  });
}

function hasArchiveUrl(plugin: PluginWithOrg): plugin is PluginWithOrg & { url: string } {
  return (
    (plugin.plugin_type === 'custom' || plugin.plugin_type === 'repository') && !!plugin.url && isHttpUrl(plugin.url)
  );
}

/** Records the latest tag the plugin's archive offers. */
export async function checkForUpdates(
  db: Db,
  config: PluginConfig,
  organizationId: string,
  plugin: PluginWithOrg,
): Promise<PluginWithOrg> {
  if (!hasArchiveUrl(plugin)) {
    throw ApiError.validation(null, 'Only plugins installed from an http(s) url can be checked for updates.');
  }
  const pkg = await fetchPackage(config, plugin.url, null);
  // Answered from the transaction that wrote it, so an error answer means nothing was recorded.
  const checked = await db.transaction(async (tx) => {
    const values = { latest_tag: pkg.tag, latest_tag_checked_at: new Date() };
    await ownedOrNotFound(updatePlugin(tx, organizationId, plugin.id, values));
    return getPluginWithOrg(tx, plugin.id);
  });
  return checked!;
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

/** Writes the changed files (null deletes one) and what they change on the plugin; answers the files. */
export async function updateSource(
  db: Db,
  actor: PluginActor,
  plugin: PluginWithOrg,
  body: Schemas['PatchedPluginSourceFilesRequest'],
): Promise<Record<string, string>> {
  const changes: Record<string, string | null> = body;
  for (const name of Object.keys(changes)) {
    if (!FILENAME.test(name)) {
      throw ApiError.validation(name, 'A file name is 1 to 200 letters, digits, ".", "_" or "-".');
    }
  }
  const before = await getSourceFiles(db, plugin.id);
  const after = { ...before };
  for (const [name, source] of Object.entries(changes)) {
    if (source === null || source === undefined) delete after[name];
    else after[name] = source;
  }
  const values = await sourceEffects(plugin, changes, after);
  const changed = fileChanges(before, after);
  if (!changed.length && !Object.keys(values).length) return before;
  // The files answered are read in the transaction that wrote them (an error answer means nothing changed).
  return db.transaction(async (tx) => {
    await ownedOrNotFound(writeSourceFiles(tx, actor.organizationId, plugin.id, changes));
    const updated = await ownedOrNotFound(updatePlugin(tx, actor.organizationId, plugin.id, values));
    const changes_ = [...fieldChanges('Plugin', plugin, updated, PLUGIN_LOGGED), ...changed];
    await logPlugin(tx, actor, 'updated', plugin.id, updated.name, changes_);
    return getSourceFiles(tx, plugin.id);
  });
}

/** Installs the archive's current version over the plugin; source and local plugins stay as they are. */
export async function upgradePlugin(
  db: Db,
  config: PluginConfig,
  actor: PluginActor,
  plugin: PluginWithOrg,
): Promise<PluginWithOrg> {
  // PostHog leaves source and local plugins as they are.
  if (!hasArchiveUrl(plugin)) return plugin;
  const pkg = await fetchPackage(config, plugin.url, null);
  const before = await getSourceFiles(db, plugin.id);
  const upgraded = await db.transaction(async (tx) => {
    const updated = await ownedOrNotFound(updatePlugin(tx, actor.organizationId, plugin.id, packageColumns(pkg)));
    await ownedOrNotFound(replaceSourceFiles(tx, actor.organizationId, plugin.id, pkg.files));
    const changes = [...fieldChanges('Plugin', plugin, updated, PLUGIN_LOGGED), ...fileChanges(before, pkg.files)];
    await logPlugin(tx, actor, 'updated', plugin.id, updated.name, changes);
    return getPluginWithOrg(tx, plugin.id);
  });
  return upgraded!;
}

/** The configured plugin repository's list of plugins, as it answers it. */
export async function repositoryList(config: Pick<Config, 'pluginRepositoryUrl' | 'pluginArchiveMaxBytes'>) {
  const url = config.pluginRepositoryUrl;
  if (!url) {
    throw ApiError.validation(
      null,
      'The plugin repository is not configured on this server (set PLUGIN_REPOSITORY_URL).',
    );
  }
  const body = await orBadRequest(null, () => download(url, config.pluginArchiveMaxBytes, 'the plugin repository'));
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
}
