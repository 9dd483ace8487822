// Accepting an invite (POST /api/signup/{invite_id}/): the rules, their wording and the key a new user
// gets. The SQL is in db/queries; the handler only turns the request into these plain values.
import type { Db } from '../db/client.js';
import { getMembership } from '../members/queries.js';
import { createKey, type PersonalApiKeyRow } from '../personal-api-keys/queries.js';
import { joinOrganization, unscopedClaimInvite } from './signup-queries.js';
import { isExpired } from './queries.js';
import { createUser, findUserByEmail, type UserRow } from '../users/queries.js';
import { ApiError } from '../core/errors.js';

export const SIGNUP_KEY_LABEL = 'Invite sign-up';

export const invalidInvite = () => ApiError.validation(null, 'The provided invite ID is not valid.');
export const expiredInvite = () =>
  ApiError.validation(null, 'This invite has expired. Please ask your admin for a new one.', 'expired');
const accountExists = () =>
  ApiError.validation(
    null,
    "An account with this email address already exists. Accept the invite with one of that account's personal API " +
      'keys.',
    'account_exists',
  );

/** PostHog's masking of an address in messages: first and last character of the local part kept. */
function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  const local = email.slice(0, at);
  const middle = '*'.repeat(Math.max(local.length - 2, 0));
  return `${local.slice(0, 1)}${middle}${local.length > 1 ? local.slice(-1) : ''}${email.slice(at)}`;
}

/** Who accepts with a key: the key's user, and the organizations the key is limited to (if any). */
export interface Acceptor {
  user: UserRow;
  scopedOrganizations: string[] | undefined;
}

export interface Names {
  first_name?: string | undefined;
  last_name?: string | undefined;
}

export interface Accepted {
  user: UserRow;
  organization: { id: string; name: string };
  /** The key minted for a new user, with its value; absent when an existing user accepted with a key. */
  minted?: { key: PersonalApiKeyRow; value: string };
}

/**
 * Accepts an invite in one transaction: claims (deletes) it, then either creates the user with its
 * address and mints their first key (no acceptor), or adds the acceptor, who must be the user with
 * that address, to the organization. An invite id alone never opens an existing account: it proves
 * only that its holder can read the invitee's mail, or the inviter's list of invites.
 */
export async function acceptInvite<T>(
  db: Db,
  inviteId: string,
  names: Names,
  acceptor: Acceptor | undefined,
  present: (tx: Db, accepted: Accepted) => Promise<T>,
): Promise<T> {
  // The answer is built inside the transaction that commits it: a failure after the commit would
  // otherwise consume the invite and lose the only copy of the new key's value.
  return db.transaction(async (tx) => present(tx, await accept(tx, inviteId, names, acceptor)));
}

async function accept(tx: Db, inviteId: string, names: Names, acceptor: Acceptor | undefined): Promise<Accepted> {
  const invite = await unscopedClaimInvite(tx, inviteId);
  if (!invite) throw invalidInvite();
  if (isExpired(invite)) throw expiredInvite();
  const existing = await findUserByEmail(tx, invite.target_email);
  if (!acceptor) {
    if (existing) throw accountExists();
    const user = await createUser(tx, {
      email: invite.target_email,
      first_name: names.first_name ?? invite.first_name,
      last_name: names.last_name ?? '',
    });
    const joined = await joinOrganization(tx, invite.organization_id, user.id, invite.level);
    const { row: key, value } = await createKey(tx, user.id, {
      label: SIGNUP_KEY_LABEL,
      scopes: ['*'],
      scoped_organizations: [],
    });
    return { ...joined, minted: { key, value } };
  }
  if (existing?.id !== acceptor.user.id) {
    throw ApiError.validation(
      null,
      `This invite is intended for another email address: ${maskEmail(invite.target_email)}. You tried to sign up ` +
        `with ${acceptor.user.email}.`,
      'invalid_recipient',
    );
  }
  if (acceptor.scopedOrganizations && !acceptor.scopedOrganizations.includes(invite.organization_id)) {
    throw ApiError.permissionDenied(
      `API key does not have access to the requested organization: ID ${invite.organization_id}.`,
    );
  }
  if (await getMembership(tx, invite.organization_id, existing.id)) {
    throw ApiError.validation(null, 'You already are a member of this organization.', 'user_already_member');
  }
  return joinOrganization(tx, invite.organization_id, existing.id, invite.level);
}
