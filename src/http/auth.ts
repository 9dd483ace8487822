import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/queries.js';
import { touchKey, unscopedOrganizationExists, unscopedProject } from '../auth/queries.js';
import { hashKeyValue } from '../tokens.js';
import { actingFor } from '../core/client-gone.js';
import { ApiError } from '../core/errors.js';
import { isUuid, rowIdOf } from '../core/ids.js';
import type { Tenant } from '../core/tenant.js';
import type { RouteMeta } from './route-meta.js';
import { hasScope } from '../core/scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    tenant: Tenant;
  }
}

const BEARER = /^Bearer\s+(\S.+)$/i;
const HOUR_MS = 3_600_000;
/** The Query API's operations, on both route families (`api_queries_*` throttles). */
const QUERY_OPERATION = /^(environments_)?query_(create|retrieve|destroy)$/;

export function presentedKey(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  if (header) {
    const token = BEARER.exec(header)?.[1]?.trim();
    // `pha_` tokens are OAuth access tokens, which this server does not issue.
    if (token && !token.startsWith('pha_')) return token;
  }
  const query = (req.query as Record<string, unknown> | undefined)?.personal_api_key;
  return typeof query === 'string' && query ? query : undefined;
}

/** The first project of the user's current organization, PostHog's fallback for `@current`. */
function currentProjectId(p: Principal): number | undefined {
  const current = p.user.current_team_id;
  if (current !== null && p.projects.has(current)) return current;
  const org = currentOrganizationId(p);
  for (const [id, project] of p.projects) if (project.organization_id === org) return id;
  return p.projects.keys().next().value;
}

function currentOrganizationId(p: Principal): string | undefined {
  const current = p.user.current_organization_id;
  if (current && p.memberships.has(current)) return current;
  return p.memberships.keys().next().value;
}

/** Builds the onRequest hook that authenticates, checks key scoping and scope, then membership. */
export function authenticate(meta: RouteMeta) {
  return async function onRequest(req: FastifyRequest): Promise<void> {
    const value = presentedKey(req);
    if (!value) {
      if (meta.optional) return;
      throw ApiError.notAuthenticated();
    }
    // The presented value is never compared with a stored one: its sha256 is the key of a map and of
    // a unique index, so how long a lookup takes says nothing about how close a guess was.
    const principal = await req.server.authCache.get(hashKeyValue(value));
    if (!principal) throw ApiError.authenticationFailed();
    req.principal = principal;
    // PostHog's Query API counts against its own throttles instead of the general ones, per key too.
    const limiter = QUERY_OPERATION.test(meta.operationId) ? req.server.queryRateLimiter : req.server.rateLimiter;
    await limiter?.hit(principal.key.id);
    if (!principal.key.last_used_at || Date.now() - principal.key.last_used_at.getTime() > HOUR_MS) {
      principal.key.last_used_at = new Date();
      touchKey(req.server.db, principal.user.id, principal.key.id).catch((err) =>
        req.log.warn({ err }, 'could not record key use'),
      );
    }
    const { key } = principal;
    const scopedTeams = key.scoped_teams?.length ? key.scoped_teams : undefined;
    const scopedOrgs = key.scoped_organizations?.length ? key.scoped_organizations : undefined;
    const params = req.params as Record<string, string>;

    if (meta.tenant.kind === 'project') {
      const raw = params[meta.tenant.param] ?? '';
      const projectId = raw === '@current' ? currentProjectId(principal) : rowIdOf(raw);
      const self = meta.tenant.self;
      const notFound = () => (self ? ApiError.notFound() : ApiError.notFound('Project not found.'));
      if (projectId === undefined) throw notFound();
      const project = principal.projects.get(projectId) ?? (await unscopedProject(req.server.db, projectId));
      if (!project) throw notFound();
      const orgId = project.organization_id;
      refuseKeyIfBarred(principal, orgId);
      if (scopedTeams && !scopedTeams.includes(projectId)) {
        throw ApiError.permissionDenied(`API key does not have access to the requested project: ID ${projectId}.`);
      }
      if (scopedOrgs && !scopedOrgs.includes(orgId)) {
        throw ApiError.permissionDenied(`API key does not have access to the requested organization: ID ${orgId}.`);
      }
      checkScopes(meta, key.scopes);
      const level = principal.memberships.get(orgId);
      if (level === undefined) {
        throw meta.tenant.self ? notFound() : ApiError.permissionDenied("You don't have access to the project.");
      }
      req.tenant = { organization_id: orgId, level, project_id: projectId, timezone: project.timezone };
      actingFor(orgId);
      return;
    }

    if (meta.tenant.kind === 'organization') {
      if (scopedTeams) {
        throw ApiError.permissionDenied('API keys with scoped projects are only supported on project-based endpoints.');
      }
      const raw = params[meta.tenant.param] ?? '';
      const orgId = raw === '@current' ? currentOrganizationId(principal) : isUuid(raw) ? raw.toLowerCase() : undefined;
      const self = meta.tenant.self;
      const notFound = () => (self ? ApiError.notFound() : ApiError.notFound('Organization not found.'));
      if (!orgId) throw notFound();
      refuseKeyIfBarred(principal, orgId);
      if (scopedOrgs && !scopedOrgs.includes(orgId)) {
        if (meta.tenant.self) throw notFound();
        throw ApiError.permissionDenied(`API key does not have access to the requested organization: ID ${orgId}.`);
      }
      checkScopes(meta, key.scopes);
      const level = principal.memberships.get(orgId);
      if (level === undefined) {
        if (meta.tenant.self || !(await unscopedOrganizationExists(req.server.db, orgId))) throw notFound();
        throw ApiError.permissionDenied();
      }
      req.tenant = { organization_id: orgId, level };
      actingFor(orgId);
      return;
    }

    if (meta.tenant.kind === 'global' && scopedTeams) {
      throw ApiError.permissionDenied('API keys with scoped projects are only supported on project-based endpoints.');
    }
    checkScopes(meta, key.scopes);
  };
}

/**
 * An organization that does not let members use personal API keys refuses this key on itself and its
 * projects while the user is below administrator there (PostHog's
 * `_check_organization_personal_api_key_restrictions`, which runs before key scoping and scopes).
 */
function refuseKeyIfBarred(principal: Principal, orgId: string): void {
  const name = principal.keyRefused.get(orgId);
  if (name !== undefined) {
    throw ApiError.permissionDenied(
      `Organization '${name}' does not allow using personal API keys. Contact an admin to enable personal API keys ` +
        `for this organization.`,
    );
  }
}

function checkScopes(meta: RouteMeta, keyScopes: readonly string[]): void {
  if (!meta.scopes?.length) throw ApiError.permissionDenied('This action does not support personal API key access');
  for (const scope of meta.scopes) {
    if (!hasScope(keyScopes, scope)) throw ApiError.permissionDenied(`API key missing required scope '${scope}'`);
  }
}

/** Organization ids a key may see, for list endpoints that are not tied to one tenant. */
export function visibleOrganizationIds(p: Principal): string[] {
  const scoped = p.key.scoped_organizations?.length ? p.key.scoped_organizations : undefined;
  return [...p.memberships.keys()].filter((id) => !scoped || scoped.includes(id));
}

export { currentOrganizationId, currentProjectId };
