// Who may do what with dashboards: a viewer's collaborator level and whether a dashboard is shared, read
// for many dashboards at once. Dashboards and the insights on them both decide access from these.
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { dashboard_collaborators, sharing_configurations } from '../db/schema/index.js';
import { prepared } from '../db/prepared.js';
import { anyOf } from '../db/queries/util.js';

export interface DashboardExtras {
  is_shared: boolean;
  /** The viewer's explicit privilege as a collaborator, if any. */
  privilege: number | null;
}

const sharedAmong = prepared('dashboards_shared_among', (db, name) =>
  db
    .select({ dashboard_id: sharing_configurations.dashboard_id })
    .from(sharing_configurations)
    .where(
      and(anyOf(sharing_configurations.dashboard_id, sql.placeholder('ids')), eq(sharing_configurations.enabled, true)),
    )
    .prepare(name),
);

const privilegesAmong = prepared('dashboards_privileges_among', (db, name) =>
  db
    .select({ dashboard_id: dashboard_collaborators.dashboard_id, level: dashboard_collaborators.level })
    .from(dashboard_collaborators)
    .where(
      and(
        anyOf(dashboard_collaborators.dashboard_id, sql.placeholder('ids')),
        eq(dashboard_collaborators.user_id, sql.placeholder('userId')),
      ),
    )
    .prepare(name),
);

/** Sharing state of several dashboards and one user's collaborator level on each, in two queries. */
export async function dashboardExtras(
  db: Db,
  ids: number[],
  userId: number | null,
): Promise<Map<number, DashboardExtras>> {
  const out = new Map<number, DashboardExtras>(ids.map((id) => [id, { is_shared: false, privilege: null }]));
  if (!ids.length) return out;
  const [shared, privileges] = await Promise.all([
    sharedAmong(db).execute({ ids }),
    userId === null ? Promise.resolve([]) : privilegesAmong(db).execute({ ids, userId }),
  ]);
  for (const s of shared) out.get(s.dashboard_id!)!.is_shared = true;
  for (const p of privileges) out.get(p.dashboard_id)!.privilege = p.level;
  return out;
}
