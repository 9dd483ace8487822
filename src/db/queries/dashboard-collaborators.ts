import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../client.js';
import { dashboard_collaborators, organization_memberships, users } from '../schema/index.js';
import type { UserRow } from './users.js';

export type CollaboratorRow = typeof dashboard_collaborators.$inferSelect;
export interface Collaborator {
  collaborator: CollaboratorRow;
  user: UserRow;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Collaborators of a dashboard whose users are active, oldest first. */
export async function listCollaborators(db: Db, dashboardId: number): Promise<Collaborator[]> {
  return db
    .select({ collaborator: dashboard_collaborators, user: users })
    .from(dashboard_collaborators)
    .innerJoin(users, eq(users.id, dashboard_collaborators.user_id))
    .where(and(eq(dashboard_collaborators.dashboard_id, dashboardId), eq(users.is_active, true)))
    .orderBy(asc(dashboard_collaborators.added_at), asc(dashboard_collaborators.id));
}

export async function findCollaborator(db: Db, dashboardId: number, userUuid: string): Promise<Collaborator | undefined> {
  if (!UUID.test(userUuid)) return undefined;
  const [row] = await db
    .select({ collaborator: dashboard_collaborators, user: users })
    .from(dashboard_collaborators)
    .innerJoin(users, eq(users.id, dashboard_collaborators.user_id))
    .where(
      and(
        eq(dashboard_collaborators.dashboard_id, dashboardId),
        eq(users.uuid, userUuid.toLowerCase()),
        eq(users.is_active, true),
      ),
    )
    .limit(1);
  return row;
}

/** Inserts a collaborator; undefined when the user already is one. */
export async function insertCollaborator(
  db: Db,
  dashboardId: number,
  userId: number,
  level: number,
): Promise<CollaboratorRow | undefined> {
  const [row] = await db
    .insert(dashboard_collaborators)
    .values({ dashboard_id: dashboardId, user_id: userId, level })
    .onConflictDoNothing({ target: [dashboard_collaborators.dashboard_id, dashboard_collaborators.user_id] })
    .returning();
  return row;
}

export async function deleteCollaborator(db: Db, id: string): Promise<void> {
  await db.delete(dashboard_collaborators).where(eq(dashboard_collaborators.id, id));
}

export async function findActiveUserByUuid(db: Db, uuid: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.uuid, uuid.toLowerCase()), eq(users.is_active, true)))
    .limit(1);
  return row;
}

/** The user's membership level in an organization, or undefined when not a member. */
export async function membershipLevel(db: Db, organizationId: string, userId: number): Promise<number | undefined> {
  const [row] = await db
    .select({ level: organization_memberships.level })
    .from(organization_memberships)
    .where(and(eq(organization_memberships.organization_id, organizationId), eq(organization_memberships.user_id, userId)))
    .limit(1);
  return row?.level;
}
