/**
 * Which tenant a route's path names, derived from the path itself:
 * `/api/organizations/{organization_id}/...` and `/api/projects/{project_id}/...` are nested in one;
 * `/api/organizations/{id}/` and `/api/projects/{id}/` are the tenant itself (non-members get 404).
 * `/api/environments/{project_id}/...` is PostHog's newer name for a project's routes: the same tenant.
 * `user` routes concern only the caller and are exempt from key scoping; `global` ones are refused to
 * keys scoped to projects, as PostHog refuses them on non-project endpoints.
 */
export type TenantSpec =
  | { kind: 'organization' | 'project'; param: string; self: boolean }
  | { kind: 'user' }
  | { kind: 'global' };

export interface RouteMeta {
  operationId: string;
  /** Scopes from the operation's security requirement; null for public operations. */
  scopes: string[] | null;
  /** The security list also allows no key (`{}`): a key is checked only when one is presented. */
  optional: boolean;
  tenant: TenantSpec;
}

type Security = Record<string, string[]>[];

export function routeMeta(
  path: string,
  operation: { operationId?: string; security?: Security },
  rootSecurity?: Security,
): RouteMeta {
  const security = operation.security ?? rootSecurity;
  const requirement = security?.find((s) => 'PersonalAPIKeyAuth' in s);
  const scopes = requirement ? (requirement.PersonalAPIKeyAuth ?? []) : null;
  const optional = Boolean(requirement && security?.some((s) => Object.keys(s).length === 0));
  return { operationId: operation.operationId ?? '', scopes, optional, tenant: tenantOf(path) };
}

function tenantOf(path: string): TenantSpec {
  const m = /^\/api\/(organizations|projects|environments)\/\{(\w+)\}\//.exec(path);
  if (m) {
    const kind = m[1] === 'organizations' ? 'organization' : 'project';
    return { kind, param: m[2]!, self: m[2] === 'id' };
  }
  if (path.startsWith('/api/users/') || path.startsWith('/api/personal_api_keys/')) return { kind: 'user' };
  return { kind: 'global' };
}
