import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { dashboards, sharing_configurations } from '../schema/index.js';
import { newSharingToken } from '../../tokens.js';
import type { DashboardRow } from './dashboards.js';

export type SharingRow = typeof sharing_configurations.$inferSelect;

export async function getSharing(db: Db, dashboardId: number): Promise<SharingRow | undefined> {
  const [row] = await db.select().from(sharing_configurations).where(eq(sharing_configurations.dashboard_id, dashboardId)).limit(1);
  return row;
}

/** Saves the configuration, creating it with a fresh token on first save; the token never changes here. */
export async function saveSharing(db: Db, dashboardId: number, change: { enabled?: boolean | undefined }): Promise<SharingRow> {
  const [row] = await db
    .insert(sharing_configurations)
    .values({ dashboard_id: dashboardId, access_token: newSharingToken(), enabled: change.enabled ?? false })
    .onConflictDoUpdate({
      target: sharing_configurations.dashboard_id,
      set: change.enabled === undefined ? { enabled: sql`${sharing_configurations.enabled}` } : { enabled: change.enabled },
    })
    .returning();
  return row!;
}

/** Gives the configuration a new token (saving it first if needed); the old token resolves no more. */
export async function rotateSharing(db: Db, dashboardId: number): Promise<SharingRow> {
  const token = newSharingToken();
  const [row] = await db
    .insert(sharing_configurations)
    .values({ dashboard_id: dashboardId, access_token: token })
    .onConflictDoUpdate({
      target: sharing_configurations.dashboard_id,
      set: { access_token: token, created_at: sql`now()` },
    })
    .returning();
  return row!;
}

/** The live dashboard behind an enabled sharing token. */
export async function sharedDashboard(db: Db, accessToken: string): Promise<DashboardRow | undefined> {
  const [row] = await db
    .select({ dashboard: dashboards })
    .from(sharing_configurations)
    .innerJoin(dashboards, eq(dashboards.id, sharing_configurations.dashboard_id))
    .where(
      and(
        eq(sharing_configurations.access_token, accessToken),
        eq(sharing_configurations.enabled, true),
        eq(dashboards.deleted, false),
      ),
    )
    .limit(1);
  return row?.dashboard;
}
