import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.js';
import { getOrganization } from '../../db/queries/organizations.js';
import type { PluginWithOrg } from '../../db/queries/plugins.js';
import { PluginPackageError } from '../../plugins/archive.js';

/** Organization.PluginsAccessLevel. */
export const PluginsAccess = { NONE: 0, CONFIG: 3, INSTALL: 6, ROOT: 9 } as const;

/** The caller's organization's `plugins_access_level`. */
export async function pluginsAccessLevel(req: FastifyRequest): Promise<number> {
  const organization = await getOrganization(req.server.db, req.tenant.organization_id);
  if (!organization) throw ApiError.notFound();
  return organization.plugins_access_level;
}

/** Reads need CONFIG, writes INSTALL (PostHog's PluginsAccessLevelPermission). */
export async function requirePluginsAccess(req: FastifyRequest, min: number): Promise<number> {
  const level = await pluginsAccessLevel(req);
  if (level < min) throw ApiError.permissionDenied("Your organization's plugin access level is insufficient.");
  return level;
}

/** Another organization's plugin (a global one it can see) is read-only to the caller. */
export function requireOwned(req: FastifyRequest, plugin: PluginWithOrg): void {
  if (plugin.organization_id !== req.tenant.organization_id) {
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
