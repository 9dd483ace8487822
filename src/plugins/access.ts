// Who may see and change an organization's plugins (PostHog's PluginsAccessLevelPermission), and
// loading a plugin as a pipeline family shows it.
import { ApiError } from '../core/errors.js';
import type { Db } from '../db/client.js';
import { getOrganization } from '../organizations/queries.js';
import { getVisiblePlugin, type Family, type PluginWithOrg } from './queries.js';
import { PluginPackageError } from './archive.js';

/** Organization.PluginsAccessLevel. */
export const PluginsAccess = { NONE: 0, CONFIG: 3, INSTALL: 6, ROOT: 9 } as const;

/** The organization's `plugins_access_level`. */
export async function pluginsAccessLevel(db: Db, organizationId: string): Promise<number> {
  const organization = await getOrganization(db, organizationId);
  if (!organization) throw ApiError.notFound();
  return organization.plugins_access_level;
}

/** Reads need CONFIG, writes INSTALL (PostHog's PluginsAccessLevelPermission). */
export async function requirePluginsAccess(db: Db, organizationId: string, min: number): Promise<number> {
  const level = await pluginsAccessLevel(db, organizationId);
  if (level < min) throw ApiError.permissionDenied("Your organization's plugin access level is insufficient.");
  return level;
}

/** Another organization's plugin (a global one it can see) is read-only to the caller. */
export function requireOwned(organizationId: string, plugin: PluginWithOrg): void {
  if (plugin.organization_id !== organizationId) {
    throw ApiError.permissionDenied('This plugin is managed by another organization.');
  }
}

/** A package problem becomes a 400 naming `attr`. */
export async function orBadRequest<T>(attr: string | null, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof PluginPackageError) throw ApiError.validation(attr, err.message);
    throw err;
  }
}

/** A write scoped to the caller's organization that reached no plugin: the plugin is not theirs, a 404. */
export async function ownedOrNotFound<T>(write: Promise<T>): Promise<Exclude<T, undefined | false>> {
  const result = await write;
  if (result === undefined || result === false) throw ApiError.notFound();
  return result as Exclude<T, undefined | false>;
}

/** The plugin as the family shows it to the organization, else a 404. */
export async function loadPlugin(db: Db, organizationId: string, family: Family, id: number) {
  const plugin = await getVisiblePlugin(db, organizationId, family, id);
  if (!plugin) throw ApiError.notFound();
  return plugin;
}

/**
 * check_for_updates and source read only the organization's own plugins (another organization's is
 * a 404) and need the install level, with PostHog's reason in the refusal.
 */
export async function loadOwnForReading(db: Db, organizationId: string, family: Family, id: number, reason: string) {
  const level = await requirePluginsAccess(db, organizationId, PluginsAccess.CONFIG);
  const plugin = await loadPlugin(db, organizationId, family, id);
  if (plugin.organization_id !== organizationId) throw ApiError.notFound();
  if (level < PluginsAccess.INSTALL) {
    throw ApiError.permissionDenied(`Plugin ${reason} is not available for the current organization!`);
  }
  return plugin;
}

/** A plugin the organization may change: the install level, and its own. */
export async function loadOwnForWriting(db: Db, organizationId: string, family: Family, id: number) {
  await requirePluginsAccess(db, organizationId, PluginsAccess.INSTALL);
  const plugin = await loadPlugin(db, organizationId, family, id);
  requireOwned(organizationId, plugin);
  return plugin;
}
