import { and, arrayOverlaps, asc, desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { dashboard_collaborators, dashboards, sharing_configurations } from '../schema/index.js';
import type { Page } from '../../http/pagination.js';
import { prepared } from '../prepared.js';
import { anyOf, countWhere } from './util.js';

export type DashboardRow = typeof dashboards.$inferSelect;
export type DashboardInsert = Omit<typeof dashboards.$inferInsert, 'id' | 'project_id' | 'created_at'>;
export type DashboardInput = Partial<
  Pick<DashboardRow, 'name' | 'description' | 'pinned' | 'deleted' | 'restriction_level' | 'filters' | 'tags'>
>;

const MAX_INT4 = 2147483647;

/** Whether `n` can be a row id; anything else cannot name a row and must not reach an int4 column. */
export function isRowId(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_INT4;
}

const liveWhere = () => and(eq(dashboards.project_id, sql.placeholder('projectId')), eq(dashboards.deleted, false));
const liveOrder = [desc(dashboards.pinned), sql`${dashboards.name} asc nulls last`, asc(dashboards.id)];

const liveCount = prepared('dashboards_live_count', (db, name) =>
  db.select({ n: sql<number>`count(*)::int` }).from(dashboards).where(liveWhere()).prepare(name),
);

const livePage = prepared('dashboards_live_page', (db, name) =>
  db
    .select()
    .from(dashboards)
    .where(liveWhere())
    .orderBy(...liveOrder)
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare(name),
);

/** Live dashboards of a project, pinned first then by name (PostHog's `-pinned, name`). */
export async function listDashboards(
  db: Db,
  projectId: number,
  page: Page,
  tags: string[],
): Promise<{ count: number; rows: DashboardRow[] }> {
  if (!tags.length) {
    const values = { projectId, limit: page.limit, offset: page.offset };
    const [[counted], rows] = await Promise.all([liveCount(db).execute(values), livePage(db).execute(values)]);
    return { count: counted?.n ?? 0, rows };
  }
  const where = and(eq(dashboards.project_id, projectId), eq(dashboards.deleted, false), arrayOverlaps(dashboards.tags, tags));
  const [count, rows] = await Promise.all([
    countWhere(db, dashboards, where),
    db
      .select()
      .from(dashboards)
      .where(where)
      .orderBy(...liveOrder)
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

/** A dashboard of the project; deleted ones only when asked for (restoring one reaches it). */
export async function getDashboard(
  db: Db,
  projectId: number,
  id: number,
  opts: { includeDeleted?: boolean } = {},
): Promise<DashboardRow | undefined> {
  if (!isRowId(id)) return undefined;
  const [row] = await db
    .select()
    .from(dashboards)
    .where(
      and(
        eq(dashboards.id, id),
        eq(dashboards.project_id, projectId),
        opts.includeDeleted ? undefined : eq(dashboards.deleted, false),
      ),
    )
    .limit(1);
  return row;
}

export async function insertDashboard(db: Db, projectId: number, input: DashboardInsert): Promise<DashboardRow> {
  const [row] = await db
    .insert(dashboards)
    .values({ ...input, project_id: projectId })
    .returning();
  return row!;
}

export async function updateDashboard(db: Db, id: number, input: DashboardInput): Promise<DashboardRow> {
  if (!Object.keys(input).length) {
    const [row] = await db.select().from(dashboards).where(eq(dashboards.id, id));
    return row!;
  }
  const [row] = await db.update(dashboards).set(input).where(eq(dashboards.id, id)).returning();
  return row!;
}

export interface DashboardExtras {
  is_shared: boolean;
  /** The viewer's explicit privilege as a collaborator, if any. */
  privilege: number | null;
}

const sharedAmong = prepared('dashboards_shared_among', (db, name) =>
  db
    .select({ dashboard_id: sharing_configurations.dashboard_id })
    .from(sharing_configurations)
    .where(and(anyOf(sharing_configurations.dashboard_id, sql.placeholder('ids')), eq(sharing_configurations.enabled, true)))
    .prepare(name),
);

const privilegesAmong = prepared('dashboards_privileges_among', (db, name) =>
  db
    .select({ dashboard_id: dashboard_collaborators.dashboard_id, level: dashboard_collaborators.level })
    .from(dashboard_collaborators)
    .where(
      and(anyOf(dashboard_collaborators.dashboard_id, sql.placeholder('ids')), eq(dashboard_collaborators.user_id, sql.placeholder('userId'))),
    )
    .prepare(name),
);

/** Sharing state of several dashboards and one user's collaborator level on each, in two queries. */
export async function dashboardExtras(db: Db, ids: number[], userId: number | null): Promise<Map<number, DashboardExtras>> {
  const out = new Map<number, DashboardExtras>(ids.map((id) => [id, { is_shared: false, privilege: null }]));
  if (!ids.length) return out;
  const [shared, privileges] = await Promise.all([
    sharedAmong(db).execute({ ids }),
    userId === null ? Promise.resolve([]) : privilegesAmong(db).execute({ ids, userId }),
  ]);
  for (const s of shared) out.get(s.dashboard_id)!.is_shared = true;
  for (const p of privileges) out.get(p.dashboard_id)!.privilege = p.level;
  return out;
}
