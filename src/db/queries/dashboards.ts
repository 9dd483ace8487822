import { and, arrayOverlaps, asc, desc, eq, inArray, ne, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import {
  dashboard_collaborators,
  dashboards,
  projects,
  sharing_configurations,
  type CreationMode,
} from '../schema/index.js';
import { isRowId } from '../../core/ids.js';
import { prepared } from '../prepared.js';
import { anyOf, countWhere } from './util.js';
import type { Page } from '../../core/paging.js';

export type DashboardRow = typeof dashboards.$inferSelect;
export type DashboardInsert = Omit<typeof dashboards.$inferInsert, 'id' | 'project_id' | 'created_at'>;
export type DashboardInput = Partial<
  Pick<
    DashboardRow,
    | 'name'
    | 'description'
    | 'pinned'
    | 'deleted'
    | 'restriction_level'
    | 'filters'
    | 'tags'
    | 'variables'
    | 'last_accessed_at'
    | 'last_refresh'
    | 'breakdown_colors'
    | 'data_color_theme_id'
  >
>;

// Unlisted dashboards belong to a product and stay out of the plain list (PostHog's rule).
const liveWhere = () =>
  and(
    eq(dashboards.project_id, sql.placeholder('projectId')),
    eq(dashboards.deleted, false),
    ne(dashboards.creation_mode, 'unlisted'),
  );
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

/**
 * Live dashboards of a project, pinned first then by name (PostHog's `-pinned, name`): the listed ones,
 * or only those of one creation mode when asked (the way to list unlisted ones).
 */
export async function listDashboards(
  db: Db,
  projectId: number,
  page: Page,
  filter: { tags: string[]; creationMode?: CreationMode | undefined },
): Promise<{ count: number; rows: DashboardRow[] }> {
  const { tags, creationMode } = filter;
  if (!tags.length && !creationMode) {
    const values = { projectId, limit: page.limit, offset: page.offset };
    const [[counted], rows] = await Promise.all([liveCount(db).execute(values), livePage(db).execute(values)]);
    return { count: counted?.n ?? 0, rows };
  }
  const where = and(
    eq(dashboards.project_id, projectId),
    eq(dashboards.deleted, false),
    creationMode ? eq(dashboards.creation_mode, creationMode) : ne(dashboards.creation_mode, 'unlisted'),
    tags.length ? arrayOverlaps(dashboards.tags, tags) : undefined,
  );
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

/** Undefined when the dashboard is not the project's. */
export async function updateDashboard(
  db: Db,
  projectId: number,
  id: number,
  input: DashboardInput,
): Promise<DashboardRow | undefined> {
  const where = and(eq(dashboards.id, id), eq(dashboards.project_id, projectId));
  if (!Object.keys(input).length) {
    const [row] = await db.select().from(dashboards).where(where);
    return row;
  }
  const [row] = await db.update(dashboards).set(input).where(where).returning();
  return row;
}

/**
 * Whether the dashboards are all the project's. Inserts of a dashboard's children check it first, in
 * the caller's transaction, since an insert has no where clause to filter by (dashboards never move).
 */
export async function dashboardInProject(db: Db, projectId: number, ...dashboardIds: number[]): Promise<boolean> {
  const ids = [...new Set(dashboardIds)];
  const rows = await db
    .select({ id: dashboards.id })
    .from(dashboards)
    .where(and(inArray(dashboards.id, ids), eq(dashboards.project_id, projectId)));
  return rows.length === ids.length;
}

/** The project's dashboards, as a subquery: writes to a dashboard's children filter by it. */
export function projectDashboardIds(projectId: number): SQL {
  return sql`(select ${dashboards.id} from ${dashboards} where ${dashboards.project_id} = ${projectId})`;
}

/** Records a retrieve (PostHog's `last_accessed_at`) and answers the row as it now is. */
/** Records a read; undefined when the dashboard is not the project's (or went away meanwhile). */
export async function touchDashboard(db: Db, projectId: number, id: number): Promise<DashboardRow | undefined> {
  const [row] = await db
    .update(dashboards)
    .set({ last_accessed_at: sql`now()` })
    .where(and(eq(dashboards.id, id), eq(dashboards.project_id, projectId)))
    .returning();
  return row;
}

/**
 * Serialises creations of unlisted dashboards in one project until the transaction ends (PostHog locks
 * the team row the same way), so two concurrent requests cannot both pass the one-per-tag check.
 */
export async function lockProjectForUnlisted(db: Db, projectId: number): Promise<void> {
  await db.select({ id: projects.id }).from(projects).where(eq(projects.id, projectId)).for('update');
}

/** The live unlisted dashboard of a project carrying `tag`, if any (one per tag per project). */
export async function findUnlisted(db: Db, projectId: number, tag: string): Promise<DashboardRow | undefined> {
  const [row] = await db
    .select()
    .from(dashboards)
    .where(
      and(
        eq(dashboards.project_id, projectId),
        eq(dashboards.deleted, false),
        eq(dashboards.creation_mode, 'unlisted'),
        arrayOverlaps(dashboards.tags, [tag]),
      ),
    )
    .limit(1);
  return row;
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
  for (const s of shared) out.get(s.dashboard_id)!.is_shared = true;
  for (const p of privileges) out.get(p.dashboard_id)!.privilege = p.level;
  return out;
}
