import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { pick } from '../http/access.js';
import { hasScope } from '../http/auth.js';
import {
  countKeys,
  createKey,
  deleteKey,
  getKey,
  listKeys,
  MAX_KEYS_PER_USER,
  rollKey,
  updateKey,
  type PersonalApiKeyInput,
} from '../db/queries/personal-api-keys.js';
import { serializeKey } from '../serializers/personal-api-keys.js';

const WRITABLE = ['label', 'scopes', 'scoped_teams', 'scoped_organizations'] as const;

type KeyBody = { scoped_teams?: number[] | null; scoped_organizations?: string[] | null };

/** A null scoping is stored as the empty list, which means the same (unrestricted) and is what clients expect to read. */
function withListScoping<T extends KeyBody>(input: T): Omit<T, keyof KeyBody> & { scoped_teams?: number[]; scoped_organizations?: string[] } {
  const { scoped_teams, scoped_organizations, ...rest } = input;
  return {
    ...rest,
    ...(scoped_teams !== undefined ? { scoped_teams: scoped_teams ?? [] } : {}),
    ...(scoped_organizations !== undefined ? { scoped_organizations: scoped_organizations ?? [] } : {}),
  };
}

/** `@current` names the key making the request. */
function keyId(req: FastifyRequest<{ Params: { id: string } }>): string {
  return req.params.id === '@current' ? req.principal.key.id : req.params.id;
}

/**
 * A key may grant only what it holds (DECISIONS §2): scopes it has, projects and organizations the
 * user belongs to, and never a wider scoping than its own.
 */
function checkGrant(req: FastifyRequest, input: Partial<PersonalApiKeyInput>): void {
  const { key, memberships, projects } = req.principal;
  for (const scope of input.scopes ?? []) {
    if (!hasScope(key.scopes, scope)) {
      throw ApiError.validation('scopes', `Cannot grant scope '${scope}': the key making this request does not hold it.`);
    }
  }
  const callerTeams = key.scoped_teams?.length ? key.scoped_teams : undefined;
  const callerOrgs = key.scoped_organizations?.length ? key.scoped_organizations : undefined;
  if ('scoped_teams' in input || callerTeams) {
    const teams = input.scoped_teams ?? [];
    if (teams.some((t) => !projects.has(t))) {
      throw ApiError.validation('scoped_teams', 'You must be a member of all teams that you are scoping the key to.');
    }
    if (callerTeams && (!teams.length || teams.some((t) => !callerTeams.includes(t)))) {
      throw ApiError.validation('scoped_teams', 'A key scoped to projects can only create keys scoped to those projects.');
    }
  }
  if ('scoped_organizations' in input || callerOrgs) {
    const orgs = input.scoped_organizations ?? [];
    if (orgs.some((o) => !memberships.has(o))) {
      throw ApiError.validation(
        'scoped_organizations',
        'You must be a member of all organizations that you are scoping the key to.',
      );
    }
    if (callerOrgs && (!orgs.length || orgs.some((o) => !callerOrgs.includes(o)))) {
      throw ApiError.validation(
        'scoped_organizations',
        'A key scoped to organizations can only create keys scoped to those organizations.',
      );
    }
  }
}

export const personalApiKeyHandlers = {
  async personal_api_keys_list(req) {
    return (await listKeys(req.server.db, req.principal.user.id)).map((k) => serializeKey(k));
  },

  async personal_api_keys_create(req, reply) {
    const input = withListScoping({ ...pick(req.body, WRITABLE), label: req.body.label, scopes: req.body.scopes });
    checkGrant(req, input);
    if ((await countKeys(req.server.db, req.principal.user.id)) >= MAX_KEYS_PER_USER) {
      throw ApiError.validation(
        null,
        `You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`,
      );
    }
    const { row, value } = await createKey(req.server.db, req.principal.user.id, input);
    reply.code(201);
    return serializeKey(row, value);
  },

  async personal_api_keys_retrieve(req) {
    const key = await getKey(req.server.db, req.principal.user.id, keyId(req));
    if (!key) throw ApiError.notFound();
    return serializeKey(key);
  },

  async personal_api_keys_partial_update(req) {
    const input = withListScoping(pick(req.body, WRITABLE));
    checkGrant(req, input);
    const key = await updateKey(req.server.db, req.principal.user.id, keyId(req), input);
    if (!key) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    return serializeKey(key);
  },

  async personal_api_keys_destroy(req, reply) {
    if (!(await deleteKey(req.server.db, req.principal.user.id, keyId(req)))) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    reply.code(204);
  },

  async personal_api_keys_roll_create(req) {
    const target = await getKey(req.server.db, req.principal.user.id, keyId(req));
    if (!target) throw ApiError.notFound();
    // Rolling reveals the new value: only a key that could have created the target may roll it.
    try {
      checkGrant(req, target);
    } catch {
      throw ApiError.permissionDenied('A key can only roll keys that grant no more than it holds itself.');
    }
    const rolled = await rollKey(req.server.db, req.principal.user.id, target.id);
    if (!rolled) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    return serializeKey(rolled.row, rolled.value);
  },
} satisfies SomeHandlers;
