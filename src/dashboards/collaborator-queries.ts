import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { dashboard_collaborators, organization_memberships, users } from '../db/schema/index.js';
import { dashboardInProject, projectDashboardIds } from './queries.js';
import type { UserRow } from '../users/queries.js';
import { isUuid } from '../core/ids.js';

export type CollaboratorRow = typeof dashboard_collaborators.$inferSelect;
export interface Collaborator {
  collaborator: CollaboratorRow;
  user: UserRow;
}

/** Collaborators of a dashboard whose users are active, oldest first. */
export async function listCollaborators(db: Db, dashboardId: number): Promise<Collaborator[]> {
  return db
    .select({ collaborator: dashboard_collaborators, user: users })
    .from(dashboard_collaborators)
    .innerJoin(users, eq(users.id, dashboard_collaborators.user_id))
    .where(and(eq(dashboard_collaborators.dashboard_id, dashboardId), eq(users.is_active, true)))
    .orderBy(asc(dashboard_collaborators.added_at), asc(dashboard_collaborators.id));
}

export async function findCollaborator(
  db: Db,
  dashboardId: number,
  userUuid: string,
): Promise<Collaborator | undefined> {
  if (!isUuid(userUuid)) return undefined;
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

/** Inserts a collaborator; undefined when the user already is one, or the dashboard is not the project's. */
export async function insertCollaborator(
  db: Db,
  projectId: number,
  dashboardId: number,
  userId: number,
  level: number,
): Promise<CollaboratorRow | undefined> {
  // An insert has no where clause to filter by: the dashboard's project is checked first, in the same transaction.
  if (!(await dashboardInProject(db, projectId, dashboardId))) return undefined;
  const [row] = await db
    .insert(dashboard_collaborators)
    .values({ dashboard_id: dashboardId, user_id: userId, level })
    .onConflictDoNothing({ target: [dashboard_collaborators.dashboard_id, dashboard_collaborators.user_id] })
    .returning();
  return row;
}

export async function deleteCollaborator(db: Db, projectId: number, dashboardId: number, id: string): Promise<void> {
  await db
    .delete(dashboard_collaborators)
    .where(
      and(
        eq(dashboard_collaborators.id, id),
        eq(dashboard_collaborators.dashboard_id, dashboardId),
        inArray(dashboard_collaborators.dashboard_id, projectDashboardIds(projectId)),
      ),
    );
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
    .where(
      and(eq(organization_memberships.organization_id, organizationId), eq(organization_memberships.user_id, userId)),
    )
    .limit(1);
  return row?.level;
}
