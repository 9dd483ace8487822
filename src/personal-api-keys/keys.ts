// A key managing its own user's keys (product decision 2): it may reach only keys within its own
// grants, before and after a change, and scope keys only to the user's own projects and organizations.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
import { hasScope } from '../core/scopes.js';
import type { Db } from '../db/client.js';
import type { Principal } from '../auth/queries.js';
import {
  countKeys,
  createKey,
  deleteKey,
  MAX_KEYS_PER_USER,
  rollKey,
  updateKey,
  withOwnKeyLocked,
  type PersonalApiKeyInput,
  type PersonalApiKeyRow,
} from './queries.js';

type Schemas = components['schemas'];

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
    const byTeams =
      teams?.every((id) => actingOrgs.includes(principal.projects.get(id)?.organization_id ?? '')) ?? false;
    if (!byOrgs && !byTeams) return false;
  }
  return true;
}

/**
 * A key manages only keys within its own grants, before and after the change: a key
 * holding `personal_api_key:write` and little else must not widen, roll, rename or delete a stronger
 * key of the same user. PostHog lets only a logged-in session manage keys, so it has no such rule.
 */
function requireWithin(principal: Principal, target: Grants, detail: string): void {
  if (!withinGrants(principal, target)) throw ApiError.permissionDenied(detail);
}

/** Projects and organizations a key is limited to must be the user's own. */
function checkMembership(principal: Principal, input: Partial<PersonalApiKeyInput>): void {
  const { memberships, projects } = principal;
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

/** A new key of the principal's user; its value is returned once. */
export async function createOwnKey(db: Db, principal: Principal, body: Schemas['PersonalAPIKeyRequest']) {
  const input = withListScoping({ ...pick(body, WRITABLE), label: body.label, scopes: body.scopes });
  checkMembership(principal, input);
  requireWithin(principal, input, 'A key can only create keys that grant no more than it holds itself.');
  if ((await countKeys(db, principal.user.id)) >= MAX_KEYS_PER_USER) {
    throw ApiError.validation(
      null,
      `You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`,
    );
  }
  return createKey(db, principal.user.id, input);
}

/** Changes key `id` of the principal's user; undefined when there is none. */
export async function changeOwnKey(
  db: Db,
  principal: Principal,
  id: string,
  body: Schemas['PatchedPersonalAPIKeyRequest'] | undefined,
): Promise<PersonalApiKeyRow | undefined> {
  const input = withListScoping(pick(body, WRITABLE));
  checkMembership(principal, input);
  const userId = principal.user.id;
  return withOwnKeyLocked(db, userId, id, async (target, tx) => {
    requireWithin(principal, target, 'A key can only change keys that grant no more than it holds itself.');
    requireWithin(principal, { ...target, ...input }, 'A key cannot make a key grant more than it holds itself.');
    return updateKey(tx, userId, target.id, input);
  });
}

/** Deletes key `id` of the principal's user; false when there is none. */
export async function deleteOwnKey(db: Db, principal: Principal, id: string): Promise<boolean> {
  const userId = principal.user.id;
  const deleted = await withOwnKeyLocked(db, userId, id, async (target, tx) => {
    requireWithin(principal, target, 'A key can only delete keys that grant no more than it holds itself.');
    return deleteKey(tx, userId, target.id);
  });
  return deleted === true;
}

/** A new value for key `id` of the principal's user; undefined when there is none. */
export async function rollOwnKey(db: Db, principal: Principal, id: string) {
  const userId = principal.user.id;
  // Rolling reveals the new value: only a key that could have created the target may roll it.
  return withOwnKeyLocked(db, userId, id, async (target, tx) => {
    requireWithin(principal, target, 'A key can only roll keys that grant no more than it holds itself.');
    return rollKey(tx, userId, target.id);
  });
}
