import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/queries.js';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { hasScope } from '../core/scopes.js';
import { projectByToken } from '../capture/ingest.js';
import { presentedKey } from '../http/auth.js';
import { hashKeyValue } from '../tokens.js';
import { invalidToken, missingToken } from './handlers.js';

/** No flags, cohorts or groups exist here: every project's definitions are this one answer. */
const DEFINITIONS = { flags: [], group_type_mapping: {}, cohorts: {} };
const ETAG = `W/"${createHash('sha256').update(JSON.stringify(DEFINITIONS)).digest('hex').slice(0, 16)}"`;

async function principalOf(req: FastifyRequest): Promise<Principal> {
  const value = presentedKey(req);
  if (!value) throw ApiError.notAuthenticated();
  const principal = await req.server.authCache.get(hashKeyValue(value));
  if (!principal) throw ApiError.authenticationFailed();
  return principal;
}

/**
 * The key must reach the project as a project route's key would (membership, the organization's
 * key setting, the key's scoped projects and organizations) and carry `feature_flag:read`.
 */
function checkReach(principal: Principal, projectId: number): void {
  const orgId = principal.projects.get(projectId)?.organization_id;
  const { key } = principal;
  const denied = () => ApiError.permissionDenied("You don't have access to the project.");
  if (orgId === undefined || !principal.memberships.has(orgId)) throw denied();
  if (principal.keyRefused.has(orgId)) throw denied();
  if (key.scoped_teams?.length && !key.scoped_teams.includes(projectId)) throw denied();
  if (key.scoped_organizations?.length && !key.scoped_organizations.includes(orgId)) throw denied();
  if (!hasScope(key.scopes, 'feature_flag:read')) {
    throw ApiError.permissionDenied("API key missing required scope 'feature_flag:read'");
  }
}

/** The project a definitions request names by `token`, or (legacy path only) the key's current one. */
async function projectId(req: FastifyRequest, principal: Principal, tokenRequired: boolean): Promise<number> {
  const raw = (req.query as Record<string, unknown>).token;
  const token = typeof raw === 'string' && raw ? raw : undefined;
  if (!token) {
    const current = principal.user.current_team_id;
    if (tokenRequired || current === null) {
      throw missingToken();
    }
    return current;
  }
  // Longer than any project token, or a NUL byte PostgreSQL text cannot hold: no project has it.
  const plausible = token.length <= 200 && !token.includes('\u0000');
  const project = plausible ? await projectByToken(req.server.db, token) : undefined;
  if (!project) throw invalidToken();
  return project.id;
}

function definitions(tokenRequired: boolean) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const principal = await principalOf(req);
    checkReach(principal, await projectId(req, principal, tokenRequired));
    reply.header('etag', ETAG).header('cache-control', 'private, must-revalidate');
    if (req.headers['if-none-match'] === ETAG) return reply.code(304).send();
    return DEFINITIONS;
  };
}

export const flagDefinitionHandlers = {
  flag_definitions_retrieve: definitions(true),
  feature_flag_local_evaluation_retrieve: definitions(false),
} satisfies SomeHandlers;
