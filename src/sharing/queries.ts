import { and, asc, eq, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import {
  dashboards,
  insights,
  organizations,
  projects,
  share_passwords,
  sharing_configurations,
  users,
} from '../db/schema/index.js';
import { newSharingToken } from '../tokens.js';
import { dashboardInProject, type DashboardRow } from '../dashboards/queries.js';
import type { InsightRow } from '../insights/queries.js';

export type SharingRow = typeof sharing_configurations.$inferSelect;
export type SharePasswordRow = typeof share_passwords.$inferSelect;
export interface SharePasswordWithCreator {
  password: SharePasswordRow;
  created_by_email: string | null;
}
export type SharingChange = Partial<Pick<SharingRow, 'enabled' | 'settings' | 'password_required'>>;

/** What a sharing configuration shares: one dashboard or one insight. */
export type SharingTarget = { kind: 'dashboard'; id: number } | { kind: 'insight'; id: number };

const targetColumn = (target: SharingTarget) =>
  target.kind === 'dashboard' ? sharing_configurations.dashboard_id : sharing_configurations.insight_id;
const targetValues = (target: SharingTarget) =>
  target.kind === 'dashboard' ? { dashboard_id: target.id } : { insight_id: target.id };

async function targetInProject(db: Db, projectId: number, target: SharingTarget): Promise<boolean> {
  if (target.kind === 'dashboard') return dashboardInProject(db, projectId, target.id);
  const [row] = await db
    .select({ id: insights.id })
    .from(insights)
    .where(and(eq(insights.id, target.id), eq(insights.project_id, projectId)))
    .limit(1);
  return row !== undefined;
}

export async function getSharing(db: Db, target: SharingTarget): Promise<SharingRow | undefined> {
  const [row] = await db
    .select()
    .from(sharing_configurations)
    .where(eq(targetColumn(target), target.id))
    .limit(1);
  return row;
}

/**
 * Saves the configuration, creating it with a fresh token on first save; the token never changes here.
 * Undefined when the dashboard or insight is not the project's.
 */
export async function saveSharing(
  db: Db,
  projectId: number,
  target: SharingTarget,
  change: SharingChange,
): Promise<SharingRow | undefined> {
  if (!(await targetInProject(db, projectId, target))) return undefined;
  const set = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)) as SharingChange;
  const [row] = await db
    .insert(sharing_configurations)
    .values({ ...targetValues(target), access_token: newSharingToken(), ...set })
    .onConflictDoUpdate({
      target: targetColumn(target),
      set: Object.keys(set).length ? set : { enabled: sql`${sharing_configurations.enabled}` },
    })
    .returning();
  return row;
}

/**
 * Gives the configuration a new token (saving it first if needed); the old token resolves no more.
 * Undefined when the dashboard or insight is not the project's.
 */
export async function rotateSharing(db: Db, projectId: number, target: SharingTarget): Promise<SharingRow | undefined> {
  if (!(await targetInProject(db, projectId, target))) return undefined;
  const token = newSharingToken();
  const [row] = await db
    .insert(sharing_configurations)
    .values({ ...targetValues(target), access_token: token })
    .onConflictDoUpdate({
      target: targetColumn(target),
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

/** The live dashboard or insight behind an enabled sharing token, with its configuration and project. */
export type SharedRows = { sharing: SharingRow; organization_id: string; project_id: number; timezone: string } & (
  | { dashboard: DashboardRow; insight: null }
  | { dashboard: null; insight: InsightRow }
);

/**
 * The live dashboard or insight behind an enabled sharing token. Nothing while the organization forbids
 * publicly shared resources (PostHog answers its 404 page then), nor for a deleted dashboard or insight.
 */
export async function sharedResource(db: Db, accessToken: string): Promise<SharedRows | undefined> {
  const [row] = await db
    .select({
      sharing: sharing_configurations,
      dashboard: dashboards,
      insight: insights,
      organization_id: organizations.id,
      project_id: projects.id,
      timezone: projects.timezone,
    })
    .from(sharing_configurations)
    .leftJoin(dashboards, and(eq(dashboards.id, sharing_configurations.dashboard_id), eq(dashboards.deleted, false)))
    .leftJoin(insights, and(eq(insights.id, sharing_configurations.insight_id), eq(insights.deleted, false)))
    .innerJoin(projects, or(eq(projects.id, dashboards.project_id), eq(projects.id, insights.project_id)))
    .innerJoin(organizations, eq(organizations.id, projects.organization_id))
    .where(
      and(
        eq(sharing_configurations.access_token, accessToken),
        eq(sharing_configurations.enabled, true),
        eq(organizations.allow_publicly_shared_resources, true),
      ),
    )
    .limit(1);
  if (!row) return undefined;
  const { sharing, organization_id, project_id, timezone } = row;
  const common = { sharing, organization_id, project_id, timezone };
  if (row.dashboard) return { ...common, dashboard: row.dashboard, insight: null };
  if (row.insight) return { ...common, dashboard: null, insight: row.insight };
  return undefined;
}
