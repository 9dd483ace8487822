import { and, arrayOverlaps, asc, desc, eq, inArray, ne, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import {
  dashboard_collaborators,
  dashboard_tiles,
  dashboards,
  projects,
  sharing_configurations,
  users,
  type CreationMode,
} from '../db/schema/index.js';
import { isRowId } from '../core/ids.js';
import { prepared } from '../db/prepared.js';
import { anyOf, countWhere, isoTimestamp } from '../db/queries/util.js';
import { tileViewJson, type TileView } from './tile-queries.js';
import { isoText, jsonObject } from '../db/queries/json.js';
import { userBasicJson, type UserBasicRow } from '../users/queries.js';
import type { Page } from '../core/paging.js';

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
const liveWhereOf = () => and(eq(dashboards.deleted, false), ne(dashboards.creation_mode, 'unlisted'));
const liveWhere = () => and(eq(dashboards.project_id, sql.placeholder('projectId')), liveWhereOf());

/**
 * How often a read records itself in `last_accessed_at`: PostHog writes it on every retrieve, which
 * under load is a row update (and a dead tuple) per read of the same dashboard; the field still says
 * when the dashboard was last opened, to the minute.
 */
export const ACCESS_RECORDED_EVERY = '1 minute';
const liveOrder = [desc(dashboards.pinned), sql`${dashboards.name} asc nulls last`, asc(dashboards.id)];

// Drizzle leaves columns unqualified in a one-table select, where a subquery's own columns would
// shadow them: the outer dashboard's id is always written out in full.
const dashboardId = sql.raw('"dashboards"."id"');

/** Whether the dashboard has an enabled share, and a user's collaborator level on it, beside each row. */
const isShared = sql<boolean>`exists (select 1 from ${sharing_configurations} s
  where s.dashboard_id = ${dashboardId} and s.enabled)`;
const privilegeOf = (userId: unknown) => sql<number | null>`(select c.level
  from ${dashboard_collaborators} c where c.dashboard_id = ${dashboardId} and c.user_id = ${userId})`;

/**
 * A dashboard of a list: its contract object (DashboardBasic) as PostgreSQL writes it, but for the
 * viewer's permissions, which src/dashboards/access.ts works out from the columns beside it.
 */
export interface DashboardListItem {
  json: string;
  created_by_id: number | null;
  restriction_level: number;
  privilege: number | null;
}

/** One statement: the page's rows as JSON, the total (a window count) and what the permissions need. */
function listSelect(db: Db, userId: unknown) {
  const d = dashboards;
  return db
    .select({
      json: sql<string>`${jsonObject({
        id: d.id,
        name: d.name,
        description: d.description,
        pinned: d.pinned,
        created_at: isoText(d.created_at),
        created_by: sql`case when ${users.id} is null then null else ${userBasicJson()} end`,
        is_shared: isShared,
        deleted: d.deleted,
        creation_mode: d.creation_mode,
        tags: d.tags,
        restriction_level: d.restriction_level,
        last_accessed_at: isoText(d.last_accessed_at),
        // PostHog reads this from its web app's per-user view log, which nothing here writes.
        last_viewed_at: sql`null`,
        last_refresh: isoText(d.last_refresh),
        team_id: d.project_id,
      })}::text`,
      created_by_id: d.created_by_id,
      restriction_level: d.restriction_level,
      privilege: privilegeOf(userId),
      total: sql<number>`count(*) over ()`.mapWith(Number),
    })
    .from(dashboards)
    .leftJoin(users, eq(users.id, dashboards.created_by_id));
}

const livePage = prepared('dashboards_live_page', (db, name) =>
  listSelect(db, sql.placeholder('userId'))
    .where(liveWhere())
    .orderBy(...liveOrder)
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare(name),
);

/**
 * Live dashboards of a project, pinned first then by name (PostHog's `-pinned, name`): the listed ones,
 * or only those of one creation mode when asked (the way to list unlisted ones). `userId` is the viewer
 * whose collaborator level comes with each row.
 */
export async function listDashboards(
  db: Db,
  projectId: number,
  page: Page,
  filter: { tags: string[]; creationMode?: CreationMode | undefined },
  userId: number | null,
): Promise<{ count: number; rows: DashboardListItem[] }> {
  const { tags, creationMode } = filter;
  let where: SQL | undefined;
  let rows: (DashboardListItem & { total: number })[];
  if (!tags.length && !creationMode) {
    rows = await livePage(db).execute({ projectId, limit: page.limit, offset: page.offset, userId });
  } else {
    where = and(
      eq(dashboards.project_id, projectId),
      eq(dashboards.deleted, false),
      creationMode ? eq(dashboards.creation_mode, creationMode) : ne(dashboards.creation_mode, 'unlisted'),
      tags.length ? arrayOverlaps(dashboards.tags, tags) : undefined,
    );
    rows = await listSelect(db, userId)
      .where(where)
      .orderBy(...liveOrder)
      .limit(page.limit)
      .offset(page.offset);
  }
  // A page past the end has no row to carry the total: only then is it counted on its own.
  if (!rows.length && page.offset > 0) {
    const count = await countWhere(db, dashboards, where ?? and(eq(dashboards.project_id, projectId), liveWhereOf()));
    return { count, rows: [] };
  }
  return { count: rows[0]?.total ?? 0, rows };
}

/** A dashboard with its live tiles, their users, sharing and the viewer's privilege, as one statement reads it. */
export interface DashboardView {
  dashboard: DashboardRow;
  tiles: TileView[];
  users: UserBasicRow[];
  is_shared: boolean;
  privilege: number | null;
  /** Whether `last_accessed_at` is unset or older than a minute (by the database's clock). */
  stale: boolean;
}

// The users a dashboard shows, as UserBasicRow objects (none of their columns is a timestamp).
const u = alias(users, 'u');
const liveTileOf = sql`from ${dashboard_tiles} t where t.dashboard_id = ${dashboardId} and not t.deleted`;

/**
 * The columns of a dashboard view; `moreUsers` (a select of user ids) adds users beyond the dashboard's
 * and its tiles' creators and editors.
 */
export function dashboardViewColumns(moreUsers?: SQL) {
  return {
    dashboard: dashboards,
    is_shared: isShared,
    privilege: privilegeOf(sql.placeholder('userId')),
    tiles: sql<TileView[]>`coalesce((select json_agg(${tileViewJson} order by t.id) ${liveTileOf}), '[]'::json)`,
    users: sql<UserBasicRow[]>`coalesce((select json_agg(${userBasicJson(u)}) from ${users} u where u.id in (
        select "dashboards"."created_by_id"
        union select t.created_by_id ${liveTileOf}
        union select t.last_modified_by_id ${liveTileOf}${moreUsers ? sql` union ${moreUsers}` : sql``})), '[]'::json)`,
    stale: sql<boolean>`("dashboards"."last_accessed_at" is null
        or "dashboards"."last_accessed_at" < now() - ${sql.raw(`interval '${ACCESS_RECORDED_EVERY}'`)})`,
  };
}

/** The live dashboard a view reads: by id, in the project. */
export const viewedDashboard = () =>
  and(
    eq(dashboards.id, sql.placeholder('id')),
    eq(dashboards.project_id, sql.placeholder('projectId')),
    eq(dashboards.deleted, false),
  );

const dashboardView = prepared('dashboard_view', (db, name) =>
  db.select(dashboardViewColumns()).from(dashboards).where(viewedDashboard()).prepare(name),
);

/** A live dashboard of the project and everything presenting it needs, in one statement. */
export async function getDashboardView(
  db: Db,
  projectId: number,
  id: number,
  userId: number | null,
): Promise<DashboardView | undefined> {
  if (!isRowId(id)) return undefined;
  const [row] = await dashboardView(db).execute({ id, projectId, userId });
  if (!row) return undefined;
  for (const tile of row.tiles) tile.last_modified_at = isoTimestamp(tile.last_modified_at);
  return row;
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

/**
 * Records a read in `last_accessed_at` unless one was recorded within ACCESS_RECORDED_EVERY; answers
 * the time written, or undefined when nothing was (recorded meanwhile, or not the project's dashboard).
 */
export async function touchDashboard(db: Db, projectId: number, id: number): Promise<Date | undefined> {
  const [row] = await db
    .update(dashboards)
    .set({ last_accessed_at: sql`now()` })
    .where(
      and(
        eq(dashboards.id, id),
        eq(dashboards.project_id, projectId),
        sql`(${dashboards.last_accessed_at} is null
          or ${dashboards.last_accessed_at} < now() - ${sql.raw(`interval '${ACCESS_RECORDED_EVERY}'`)})`,
      ),
    )
    .returning({ at: dashboards.last_accessed_at });
  return row?.at ?? undefined;
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
