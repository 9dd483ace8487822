import { asc, eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { organization_invites, organization_memberships, organizations, projects, users } from '../db/schema/index.js';
import type { InviteRow } from './queries.js';
import type { UserRow } from '../users/queries.js';

/**
 * Removes an invite and answers it: deleting first claims it, so two concurrent sign-ups cannot both use
 * it. Unscoped: the sign-up route has no tenant, the invite's id is what the caller holds.
 */
export async function unscopedClaimInvite(db: Db, inviteId: string): Promise<InviteRow | undefined> {
  const [invite] = await db.delete(organization_invites).where(eq(organization_invites.id, inviteId)).returning();
  return invite;
}

/**
 * Adds the user to the organization at `level` and makes the organization and its first project the
 * user's current ones. Answers the updated user and the organization's id and name.
 */
export async function joinOrganization(
  db: Db,
  organizationId: string,
  userId: number,
  level: number,
): Promise<{ user: UserRow; organization: { id: string; name: string } }> {
  await db.insert(organization_memberships).values({ organization_id: organizationId, user_id: userId, level });
  const [project] = await db
    .select({ id: projects.id })
    .from(projects)
    .where(eq(projects.organization_id, organizationId))
    .orderBy(asc(projects.id))
    .limit(1);
  const [user] = await db
    .update(users)
    .set({ current_organization_id: organizationId, current_team_id: project?.id ?? null })
    .where(eq(users.id, userId))
    .returning();
  const [organization] = await db
    .select({ id: organizations.id, name: organizations.name })
    .from(organizations)
    .where(eq(organizations.id, organizationId));
  return { user: user!, organization: organization! };
}
