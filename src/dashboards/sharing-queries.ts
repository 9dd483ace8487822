import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import {
  dashboards,
  organizations,
  projects,
  share_passwords,
  sharing_configurations,
  users,
} from '../db/schema/index.js';
import { newSharingToken } from '../tokens.js';
import { dashboardInProject, type DashboardRow } from './queries.js';

export type SharingRow = typeof sharing_configurations.$inferSelect;
export type SharePasswordRow = typeof share_passwords.$inferSelect;
export interface SharePasswordWithCreator {
  password: SharePasswordRow;
  created_by_email: string | null;
}
export type SharingChange = Partial<Pick<SharingRow, 'enabled' | 'settings' | 'password_required'>>;

export async function getSharing(db: Db, dashboardId: number): Promise<SharingRow | undefined> {
  const [row] = await db
    .select()
    .from(sharing_configurations)
    .where(eq(sharing_configurations.dashboard_id, dashboardId))
    .limit(1);
  return row;
}

/**
 * Saves the configuration, creating it with a fresh token on first save; the token never changes here.
 * Undefined when the dashboard is not the project's.
 */
export async function saveSharing(
  db: Db,
  projectId: number,
  dashboardId: number,
  change: SharingChange,
): Promise<SharingRow | undefined> {
  if (!(await dashboardInProject(db, projectId, dashboardId))) return undefined;
  const set = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)) as SharingChange;
  const [row] = await db
    .insert(sharing_configurations)
    .values({ dashboard_id: dashboardId, access_token: newSharingToken(), ...set })
    .onConflictDoUpdate({
      target: sharing_configurations.dashboard_id,
      set: Object.keys(set).length ? set : { enabled: sql`${sharing_configurations.enabled}` },
    })
    .returning();
  return row;
}

/**
 * Gives the configuration a new token (saving it first if needed); the old token resolves no more.
 * Undefined when the dashboard is not the project's.
 */
export async function rotateSharing(db: Db, projectId: number, dashboardId: number): Promise<SharingRow | undefined> {
  if (!(await dashboardInProject(db, projectId, dashboardId))) return undefined;
  const token = newSharingToken();
  const [row] = await db
    .insert(sharing_configurations)
    .values({ dashboard_id: dashboardId, access_token: token })
    .onConflictDoUpdate({
      target: sharing_configurations.dashboard_id,
      set: { access_token: token, created_at: sql`now()` },
    })
    .returning();
  return row;
}

/** The active passwords of a configuration, oldest first, with their creators' e-mails. */
export async function activePasswords(db: Db, sharingId: number): Promise<SharePasswordWithCreator[]> {
  return db
    .select({ password: share_passwords, created_by_email: users.email })
    .from(share_passwords)
    .leftJoin(users, eq(users.id, share_passwords.created_by_id))
    .where(and(eq(share_passwords.sharing_configuration_id, sharingId), eq(share_passwords.is_active, true)))
    .orderBy(asc(share_passwords.id));
}

export async function insertPassword(
  db: Db,
  sharingId: number,
  input: { password_hash: string; note: string; created_by_id: number },
): Promise<SharePasswordRow> {
  const [row] = await db
    .insert(share_passwords)
    .values({ ...input, sharing_configuration_id: sharingId })
    .returning();
  return row!;
}

export async function isActivePassword(db: Db, sharingId: number, passwordId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: share_passwords.id })
    .from(share_passwords)
    .where(
      and(
        eq(share_passwords.id, passwordId),
        eq(share_passwords.sharing_configuration_id, sharingId),
        eq(share_passwords.is_active, true),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/** Deactivates an active password of this configuration; false when there is none by that id. */
export async function deactivatePassword(db: Db, sharingId: number, passwordId: number): Promise<boolean> {
  const rows = await db
    .update(share_passwords)
    .set({ is_active: false })
    .where(
      and(
        eq(share_passwords.id, passwordId),
        eq(share_passwords.sharing_configuration_id, sharingId),
        eq(share_passwords.is_active, true),
      ),
    )
    .returning({ id: share_passwords.id });
  return rows.length > 0;
}

/**
 * The live dashboard behind an enabled sharing token, with its configuration. Nothing while the
 * dashboard's organization forbids publicly shared resources (PostHog answers its 404 page then).
 */
export async function sharedDashboard(
  db: Db,
  accessToken: string,
): Promise<{ dashboard: DashboardRow; sharing: SharingRow } | undefined> {
  const [row] = await db
    .select({ dashboard: dashboards, sharing: sharing_configurations })
    .from(sharing_configurations)
    .innerJoin(dashboards, eq(dashboards.id, sharing_configurations.dashboard_id))
    .innerJoin(projects, eq(projects.id, dashboards.project_id))
    .innerJoin(organizations, eq(organizations.id, projects.organization_id))
    .where(
      and(
        eq(sharing_configurations.access_token, accessToken),
        eq(sharing_configurations.enabled, true),
        eq(dashboards.deleted, false),
        eq(organizations.allow_publicly_shared_resources, true),
      ),
    )
    .limit(1);
  return row;
}
