import { randomInt } from 'node:crypto';
import { and, asc, desc, eq, ilike, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { dashboard_tiles, dashboards, insights } from '../db/schema/index.js';
import { isRowId } from '../core/ids.js';
import type { Page } from '../core/paging.js';

export type InsightRow = typeof insights.$inferSelect;
export type InsightInsert = Omit<typeof insights.$inferInsert, 'id' | 'project_id' | 'short_id'>;
export type InsightChange = Partial<
  Pick<
    InsightRow,
    | 'name'
    | 'derived_name'
    | 'description'
    | 'query'
    | 'filters'
    | 'order'
    | 'deleted'
    | 'saved'
    | 'favorited'
    | 'tags'
    | 'last_modified_by_id'
  >
>;

/** A tile that puts an insight on a dashboard (PostHog's DashboardTileBasic), with the dashboard's restriction. */
export interface InsightTile {
  id: number;
  insight_id: number;
  dashboard_id: number;
  deleted: boolean;
  restriction_level: number;
  created_by_id: number | null;
}

const SHORT_ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** PostHog's generate_short_id: eight letters and digits. */
export function newShortId(): string {
  let id = '';
  for (let i = 0; i < 8; i++) id += SHORT_ID_ALPHABET[randomInt(SHORT_ID_ALPHABET.length)];
  return id;
}

export async function insertInsight(db: Db, projectId: number, input: InsightInsert): Promise<InsightRow> {
  const [row] = await db
    .insert(insights)
    .values({ ...input, project_id: projectId, short_id: newShortId() })
    .returning();
  return row!;
}

/** An insight of the project; a deleted one only when asked for. */
export async function getInsight(
  db: Db,
  projectId: number,
  id: number,
  opts: { includeDeleted?: boolean } = {},
): Promise<InsightRow | undefined> {
  if (!isRowId(id)) return undefined;
  const [row] = await db
    .select()
    .from(insights)
    .where(
      and(
        eq(insights.id, id),
        eq(insights.project_id, projectId),
        opts.includeDeleted ? undefined : eq(insights.deleted, false),
      ),
    )
    .limit(1);
  return row;
}

/** Several live insights of the project, by id. */
export async function getInsights(db: Db, projectId: number, ids: number[]): Promise<Map<number, InsightRow>> {
  if (!ids.length) return new Map();
  const rows = await db
    .select()
    .from(insights)
    .where(and(inArray(insights.id, ids), eq(insights.project_id, projectId), eq(insights.deleted, false)));
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * The live tiles putting the insight `ref` (a row of `insights`, named as the query names it) on live
 * dashboards of its project, as a JSON array of InsightTile (as `insightTiles` reads them).
 */
export const insightTilesJson = (ref: string) =>
  sql<InsightTile[]>`coalesce((select json_agg(json_build_object('id', it.id, 'insight_id', it.insight_id,
      'dashboard_id', it.dashboard_id, 'deleted', it.deleted, 'restriction_level', id_.restriction_level,
      'created_by_id', id_.created_by_id) order by it.id)
    from ${dashboard_tiles} it join ${dashboards} id_ on id_.id = it.dashboard_id
    where it.insight_id = ${sql.raw(ref)}.id and id_.project_id = ${sql.raw(ref)}.project_id
      and not it.deleted and not id_.deleted), '[]'::json)`;

/**
 * The project's live insights among `ids`, each with the live tiles that put it on live dashboards
 * (as `insightTiles` reads them), in one statement: what a dashboard's insight tiles show. The
 * subquery names the outer table plainly: Drizzle leaves a one-table select's columns unqualified.
 */
export async function getInsightsWithTiles(
  db: Db,
  projectId: number,
  ids: number[],
): Promise<{ rows: InsightRow[]; tiles: Map<number, InsightTile[]> }> {
  if (!ids.length) return { rows: [], tiles: new Map() };
  const found = await db
    .select({ insight: insights, tiles: insightTilesJson('insights') })
    .from(insights)
    .where(and(inArray(insights.id, ids), eq(insights.project_id, projectId), eq(insights.deleted, false)));
  return {
    rows: found.map((f) => f.insight),
    tiles: new Map(found.map((f) => [f.insight.id, f.tiles])),
  };
}

export async function updateInsight(
  db: Db,
  projectId: number,
  id: number,
  change: InsightChange,
  material: boolean,
): Promise<InsightRow | undefined> {
  const [row] = await db
    .update(insights)
    .set({
      ...change,
      updated_at: sql`now()`,
      ...(material ? { last_modified_at: sql`now()` } : {}),
    })
    .where(and(eq(insights.id, id), eq(insights.project_id, projectId)))
    .returning();
  return row;
}

export interface InsightFilter {
  saved?: boolean | undefined;
  favorited?: boolean | undefined;
  shortId?: string | undefined;
  search?: string | undefined;
  createdBy?: number | undefined;
  dashboards?: number[] | undefined;
  tags?: string[] | undefined;
}

/** A live tile of the insight on a live dashboard (PostHog's DashboardTile manager hides the others). */
const onDashboard = (dashboardId: number | SQL) =>
  sql`exists (select 1 from ${dashboard_tiles} t join ${dashboards} d on d.id = t.dashboard_id
    where t.insight_id = ${insights.id} and t.deleted = false and d.deleted = false
      and t.dashboard_id = ${dashboardId})`;
const onAnyDashboard = sql`exists (select 1 from ${dashboard_tiles} t join ${dashboards} d on d.id = t.dashboard_id
    where t.insight_id = ${insights.id} and t.deleted = false and d.deleted = false)`;

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function filterWhere(projectId: number, f: InsightFilter): SQL {
  const conditions: (SQL | undefined)[] = [eq(insights.project_id, projectId), eq(insights.deleted, false)];
  if (f.saved === true) conditions.push(sql`(${insights.saved} or ${onAnyDashboard})`);
  if (f.saved === false) conditions.push(eq(insights.saved, false));
  if (f.favorited) conditions.push(eq(insights.favorited, true));
  if (f.shortId !== undefined) conditions.push(eq(insights.short_id, f.shortId));
  if (f.createdBy !== undefined) conditions.push(eq(insights.created_by_id, f.createdBy));
  if (f.search) {
    const like = `%${escapeLike(f.search)}%`;
    conditions.push(
      sql`(${ilike(insights.name, like)} or ${ilike(insights.derived_name, like)}
        or ${ilike(insights.description, like)}
        or exists (select 1 from unnest(${insights.tags}) tag where tag ilike ${like}))`,
    );
  }
  for (const id of f.dashboards ?? []) conditions.push(onDashboard(id));
  if (f.tags?.length) conditions.push(sql`${insights.tags} && ${sql.param(f.tags)}::text[]`);
  return and(...conditions)!;
}

/** A page of the project's live insights: by `order` (unset last), then newest first. */
export async function listInsights(
  db: Db,
  projectId: number,
  page: Page,
  filter: InsightFilter,
): Promise<{ count: number; rows: InsightRow[] }> {
  const where = filterWhere(projectId, filter);
  const [rows, [counted]] = await Promise.all([
    db
      .select()
      .from(insights)
      .where(where)
      .orderBy(sql`${insights.order} asc nulls last`, desc(insights.last_modified_at), desc(insights.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ count: sql<number>`count(*)::int` }).from(insights).where(where),
  ]);
  return { count: counted!.count, rows };
}

/**
 * The live tiles of the insights on live dashboards, with each dashboard's restriction, by insight id; the
 * dashboards are looked for in the insights' own projects.
 */
export async function insightTiles(
  db: Db,
  insights: { id: number; project_id: number }[],
): Promise<Map<number, InsightTile[]>> {
  const insightIds = insights.map((i) => i.id);
  const projectIds = [...new Set(insights.map((i) => i.project_id))];
  const out = new Map<number, InsightTile[]>(insightIds.map((id) => [id, []]));
  if (!insightIds.length) return out;
  const rows = await db
    .select({
      id: dashboard_tiles.id,
      insight_id: sql<number>`${dashboard_tiles.insight_id}`,
      dashboard_id: dashboard_tiles.dashboard_id,
      deleted: dashboard_tiles.deleted,
      restriction_level: dashboards.restriction_level,
      created_by_id: dashboards.created_by_id,
    })
    .from(dashboard_tiles)
    .innerJoin(dashboards, eq(dashboards.id, dashboard_tiles.dashboard_id))
    .where(
      and(
        inArray(dashboards.project_id, projectIds),
        inArray(dashboard_tiles.insight_id, insightIds),
        eq(dashboard_tiles.deleted, false),
        eq(dashboards.deleted, false),
      ),
    )
    .orderBy(asc(dashboard_tiles.id));
  for (const row of rows) out.get(row.insight_id)!.push(row);
  return out;
}

/** The dashboards named, in any project: to tell another project's dashboard from none (as PostHog does). */
export async function dashboardsByIds(
  db: Db,
  ids: number[],
): Promise<
  Map<
    number,
    Pick<typeof dashboards.$inferSelect, 'id' | 'project_id' | 'deleted' | 'restriction_level' | 'created_by_id'>
  >
> {
  const valid = ids.filter(isRowId);
  if (!valid.length) return new Map();
  const rows = await db
    .select({
      id: dashboards.id,
      project_id: dashboards.project_id,
      deleted: dashboards.deleted,
      restriction_level: dashboards.restriction_level,
      created_by_id: dashboards.created_by_id,
    })
    .from(dashboards)
    .where(inArray(dashboards.id, valid));
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Puts the insight on exactly these dashboards of the project: a tile deleted before comes back, a new
 * one is added, and tiles on dashboards no longer named are deleted (soft), as PostHog does.
 */
export async function setInsightDashboards(
  db: Db,
  projectId: number,
  insightId: number,
  dashboardIds: number[],
  userId: number,
): Promise<void> {
  const inProject = sql`${dashboard_tiles.dashboard_id} in
    (select id from ${dashboards} where project_id = ${projectId})`;
  await db
    .update(dashboard_tiles)
    .set({ deleted: true })
    .where(
      and(
        eq(dashboard_tiles.insight_id, insightId),
        inProject,
        dashboardIds.length ? sql`not (${inArray(dashboard_tiles.dashboard_id, dashboardIds)})` : undefined,
      ),
    );
  if (!dashboardIds.length) return;
  const existing = await db
    .select({ id: dashboard_tiles.id, dashboard_id: dashboard_tiles.dashboard_id })
    .from(dashboard_tiles)
    .where(and(eq(dashboard_tiles.insight_id, insightId), inArray(dashboard_tiles.dashboard_id, dashboardIds)));
  const have = new Set(existing.map((t) => t.dashboard_id));
  if (existing.length) {
    await db
      .update(dashboard_tiles)
      .set({ deleted: false })
      .where(
        inArray(
          dashboard_tiles.id,
          existing.map((t) => t.id),
        ),
      );
  }
  const missing = dashboardIds.filter((id) => !have.has(id));
  if (missing.length) {
    await db
      .insert(dashboard_tiles)
      .values(
        missing.map((dashboard_id) => ({ dashboard_id, insight_id: insightId, created_by_id: userId, body: '' })),
      );
  }
}

/** Deletes (soft) every tile of the insight, as PostHog does when the insight is deleted. */
export async function deleteInsightTiles(db: Db, projectId: number, insightId: number): Promise<void> {
  await db
    .update(dashboard_tiles)
    .set({ deleted: true })
    .where(
      and(
        eq(dashboard_tiles.insight_id, insightId),
        sql`${dashboard_tiles.dashboard_id} in (select id from ${dashboards} where project_id = ${projectId})`,
      ),
    );
}

/**
 * Deletes (soft) the insights of a dashboard that are on no other live dashboard, as PostHog does when a
 * dashboard is deleted with `delete_insights`.
 */
export async function deleteInsightsOnlyOn(db: Db, projectId: number, dashboardId: number): Promise<void> {
  await db.execute(sql`update ${insights} i set deleted = true, updated_at = now()
    where i.project_id = ${projectId} and not i.deleted
      and exists (select 1 from ${dashboard_tiles} t where t.insight_id = i.id and t.dashboard_id = ${dashboardId})
      and not exists (select 1 from ${dashboard_tiles} t join ${dashboards} d on d.id = t.dashboard_id
        where t.insight_id = i.id and t.dashboard_id <> ${dashboardId} and not t.deleted and not d.deleted)`);
}

/** The filters and variables of a dashboard of the project (not deleted): the context an insight is read in. */
export async function dashboardContextOf(
  db: Db,
  projectId: number,
  id: number,
): Promise<{ filters: Record<string, unknown>; variables: Record<string, unknown> } | undefined> {
  if (!isRowId(id)) return undefined;
  const [row] = await db
    .select({ filters: dashboards.filters, variables: dashboards.variables })
    .from(dashboards)
    .where(and(eq(dashboards.id, id), eq(dashboards.project_id, projectId), eq(dashboards.deleted, false)))
    .limit(1);
  return row;
}
