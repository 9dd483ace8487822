import type { FastifyRequest } from 'fastify';
import type { Principal } from '../db/queries/auth.js';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
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
  withOwnKeyLocked,
  type PersonalApiKeyInput,
  type PersonalApiKeyRow,
} from '../db/queries/personal-api-keys.js';
import { serializeKey } from '../serializers/personal-api-keys.js';

const WRITABLE = ['label', 'scopes', 'scoped_teams', 'scoped_organizations'] as const;

type Grants = Pick<PersonalApiKeyRow, 'scopes'> &
  Partial<Pick<PersonalApiKeyRow, 'scoped_teams' | 'scoped_organizations'>>;

type KeyBody = { scoped_teams?: number[] | null; scoped_organizations?: string[] | null };

/**
 * A null scoping is stored as the empty list, which means the same (unrestricted) and is what clients expect to
 * read.
 */
function withListScoping<T extends KeyBody>(
  input: T,
): Omit<T, keyof KeyBody> & { scoped_teams?: number[]; scoped_organizations?: string[] } {
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

/** An empty or missing scoping list means no limit, as in authentication. */
const limitOf = <T>(list: T[] | null | undefined): T[] | undefined => (list?.length ? list : undefined);

/**
 * Whether a key with `target`'s grants reaches nothing the acting key does not: each of its scopes
 * is covered (write covers read, only `*` covers `*`), and its projects and organizations lie within
 * the acting key's (a key limited to projects is within one limited to organizations when those
 * projects belong to them).
 */
export function withinGrants(principal: Principal, target: Grants): boolean {
  const acting = principal.key;
  if (!target.scopes.every((s) => (s === '*' ? acting.scopes.includes('*') : hasScope(acting.scopes, s)))) return false;
  const actingTeams = limitOf(acting.scoped_teams);
  const actingOrgs = limitOf(acting.scoped_organizations);
  const teams = limitOf(target.scoped_teams);
  const orgs = limitOf(target.scoped_organizations);
  if (actingTeams && !teams?.every((id) => actingTeams.includes(id))) return false;
  if (actingOrgs) {
    const byOrgs = orgs?.every((id) => actingOrgs.includes(id)) ?? false;
    const byTeams = teams?.every((id) => actingOrgs.includes(principal.projects.get(id) ?? '')) ?? false;
    if (!byOrgs && !byTeams) return false;
  }
  return true;
}

/**
 * A key manages only keys within its own grants, before and after the change: a key
 * holding `personal_api_key:write` and little else must not widen, roll, rename or delete a stronger
 * key of the same user. PostHog lets only a logged-in session manage keys, so it has no such rule.
 */
function requireWithin(req: FastifyRequest, target: Grants, detail: string): void {
  if (!withinGrants(req.principal, target)) throw ApiError.permissionDenied(detail);
}

/** Projects and organizations a key is limited to must be the user's own. */
function checkMembership(req: FastifyRequest, input: Partial<PersonalApiKeyInput>): void {
  const { memberships, projects } = req.principal;
  if (input.scoped_teams?.some((t) => !projects.has(t))) {
    throw ApiError.validation('scoped_teams', 'You must be a member of all teams that you are scoping the key to.');
  }
  if (input.scoped_organizations?.some((o) => !memberships.has(o))) {
    throw ApiError.validation(
      'scoped_organizations',
      'You must be a member of all organizations that you are scoping the key to.',
    );
  }
}

export const personalApiKeyHandlers = {
  async personal_api_keys_list(req) {
    return (await listKeys(req.server.db, req.principal.user.id)).map((k) => serializeKey(k));
  },

  async personal_api_keys_create(req, reply) {
    const input = withListScoping({ ...pick(req.body, WRITABLE), label: req.body.label, scopes: req.body.scopes });
    checkMembership(req, input);
    requireWithin(req, input, 'A key can only create keys that grant no more than it holds itself.');
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
    checkMembership(req, input);
    const userId = req.principal.user.id;
    const key = await withOwnKeyLocked(req.server.db, userId, keyId(req), async (target, tx) => {
      requireWithin(req, target, 'A key can only change keys that grant no more than it holds itself.');
      requireWithin(req, { ...target, ...input }, 'A key cannot make a key grant more than it holds itself.');
      return updateKey(tx, userId, target.id, input);
    });
    if (!key) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    return serializeKey(key);
  },

  async personal_api_keys_destroy(req, reply) {
    const userId = req.principal.user.id;
    const deleted = await withOwnKeyLocked(req.server.db, userId, keyId(req), async (target, tx) => {
      requireWithin(req, target, 'A key can only delete keys that grant no more than it holds itself.');
      return deleteKey(tx, userId, target.id);
    });
    if (!deleted) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    reply.code(204);
  },

  async personal_api_keys_roll_create(req) {
    const userId = req.principal.user.id;
    // Rolling reveals the new value: only a key that could have created the target may roll it.
    const rolled = await withOwnKeyLocked(req.server.db, userId, keyId(req), async (target, tx) => {
      requireWithin(req, target, 'A key can only roll keys that grant no more than it holds itself.');
      return rollKey(tx, userId, target.id);
    });
    if (!rolled) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    return serializeKey(rolled.row, rolled.value);
  },
} satisfies SomeHandlers;
