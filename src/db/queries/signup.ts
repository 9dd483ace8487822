import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../client.js';
import { organization_invites, organization_memberships, organizations, projects, users } from '../schema/index.js';
import { ApiError } from '../../http/errors.js';
import { countKeys, createKey, MAX_KEYS_PER_USER, type PersonalApiKeyRow } from './personal-api-keys.js';
import { isExpired } from './invites.js';
import { createUser, findUserByEmail, type UserRow } from './users.js';

export const SIGNUP_KEY_LABEL = 'Invite sign-up';

export const invalidInvite = () => ApiError.validation(null, 'The provided invite ID is not valid.');
export const expiredInvite = () =>
  ApiError.validation(null, 'This invite has expired. Please ask your admin for a new one.', 'expired');

export interface Accepted {
  user: UserRow;
  organization: { id: string; name: string };
  key: PersonalApiKeyRow;
  value: string;
}

/**
 * Accepts an invite in one transaction: claims (deletes) it, creates or reuses the user with its
 * address, adds the membership, makes the organization and its first project current, and mints a
 * key. A key for a user who already existed only reaches the inviting organization: holding the
 * invite proves nothing about the user's other organizations.
 */
export async function acceptInvite(
  db: Db,
  inviteId: string,
  names: { first_name?: string | undefined; last_name?: string | undefined },
): Promise<Accepted> {
  return db.transaction(async (tx) => {
    // Deleting first claims the invite, so two concurrent sign-ups cannot both use it.
    const [invite] = await tx.delete(organization_invites).where(eq(organization_invites.id, inviteId)).returning();
    if (!invite) throw invalidInvite();
    if (isExpired(invite)) throw expiredInvite();
    const orgId = invite.organization_id;

    let user = await findUserByEmail(tx, invite.target_email);
    const existed = Boolean(user);
    if (user) {
      // A deactivated account stays locked out; a key minted for it would not authenticate anyway.
      if (!user.is_active) throw ApiError.validation(null, 'The account with this email address is deactivated.');
      const [member] = await tx
        .select({ id: organization_memberships.id })
        .from(organization_memberships)
        .where(and(eq(organization_memberships.user_id, user.id), eq(organization_memberships.organization_id, orgId)))
        .limit(1);
      if (member) throw ApiError.validation(null, 'You already are a member of this organization.', 'user_already_member');
      if ((await countKeys(tx, user.id)) >= MAX_KEYS_PER_USER) {
        throw ApiError.validation(
          null,
          `You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`,
        );
      }
    } else {
      user = await createUser(tx, {
        email: invite.target_email,
        first_name: names.first_name ?? invite.first_name,
        last_name: names.last_name ?? '',
      });
    }

    await tx.insert(organization_memberships).values({ organization_id: orgId, user_id: user.id, level: invite.level });
    const [project] = await tx
      .select({ id: projects.id })
      .from(projects)
      .where(eq(projects.organization_id, orgId))
      .orderBy(asc(projects.id))
      .limit(1);
    [user] = await tx
      .update(users)
      .set({ current_organization_id: orgId, current_team_id: project?.id ?? null })
      .where(eq(users.id, user.id))
      .returning();
    const { row: key, value } = await createKey(tx, user!.id, {
      label: SIGNUP_KEY_LABEL,
      scopes: ['*'],
      scoped_organizations: existed ? [orgId] : [],
    });
    const [organization] = await tx
      .select({ id: organizations.id, name: organizations.name })
      .from(organizations)
      .where(eq(organizations.id, orgId));
    return { user: user!, organization: organization!, key, value };
  });
}
