import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { dashboard_tiles, dashboards, insights, projects, query_cache } from '../db/schema/index.js';
import { isRowId } from '../core/ids.js';
import { prepared } from '../db/prepared.js';
import { isoTimestamp } from '../db/queries/util.js';
import { insightTilesJson, type InsightRow, type InsightTile } from '../insights/queries.js';
import { dashboardViewColumns, viewedDashboard, type DashboardView } from './queries.js';

/** An insight tile's live insight, as the cached view reads it with the answer kept under the tile's stored key. */
export interface TileInsight {
  tile_id: number;
  /** The key the tile's result was last cached under; null until one was. */
  key: string | null;
  insight: InsightRow;
  tiles: InsightTile[];
  /**
   * The unexpired answer kept under `key`, if any: when it was computed, and the fields an insight shows
   * of it (result, hasMore, ...) as the text of a JSON object, which the response takes as it is.
   */
  answer: { at: string; fields: string } | null;
}

/** A dashboard view (`getDashboardView`) with its insight tiles' insights and cached answers. */
export interface CachedDashboardView extends DashboardView {
  insights: TileInsight[];
  /** The project's test account filters, part of the key of a query that applies them. */
  test_account_filters: unknown[] | null;
}

const project = sql.raw('"dashboards"."project_id"');
// Each tile's insight by its key (the fence keeps the planner from scanning the project's insights per tile).
const tileInsightsJoin = sql`from ${dashboard_tiles} t
    cross join lateral (select * from ${insights} i where i.id = t.insight_id offset 0) ti`;
const tileInsightsWhere = sql`where t.dashboard_id = "dashboards"."id" and not t.deleted and t.insight_id is not null
    and ti.project_id = ${project} and not ti.deleted`;

/**
 * The answer kept under the tile's key, in the project's own cache: its time and the fields an insight
 * shows of it, as stored with it (written from the answer, as `serializeInsight` reads it, for a row
 * stored before they were kept).
 */
const answerJson = sql`(select json_build_object('at', q.last_refresh, 'fields', coalesce(q.insight_fields,
    json_build_object('result', coalesce(nullif(q.answer->'results', 'null'::jsonb), q.answer->'result'),
      'hasMore', q.answer->'hasMore', 'columns', q.answer->'columns', 'types', q.answer->'types',
      'hogql', q.answer->'hogql', 'resolved_date_range', q.answer->'resolved_date_range')::text))
  from ${query_cache} q where q.project_id = ${project} and q.cache_key = t.cache_key and q.expires_at > now())`;

const cachedView = prepared('dashboard_cached_view', (db, name) =>
  db
    .select({
      ...dashboardViewColumns(
        sql`select v.id ${tileInsightsJoin}
          cross join lateral (values (ti.created_by_id), (ti.last_modified_by_id)) v(id) ${tileInsightsWhere}`,
      ),
      insights: sql<TileInsight[]>`coalesce((select json_agg(json_build_object('tile_id', t.id, 'key', t.cache_key,
          'insight', to_json(ti), 'tiles', ${insightTilesJson('ti')}, 'answer', ${answerJson}) order by t.id)
        ${tileInsightsJoin} ${tileInsightsWhere}), '[]'::json)`,
      test_account_filters: sql<unknown[] | null>`(select p.test_account_filters from ${projects} p
        where p.id = ${project})`,
    })
    .from(dashboards)
    .where(viewedDashboard())
    .prepare(name),
);

/**
 * A live dashboard of the project with everything a plain read (served from the cache) presents, in one
 * statement: `getDashboardView`'s columns, its insight tiles' live insights with their tiles, and the
 * answers cached under the tiles' stored keys.
 */
export async function getCachedDashboardView(
  db: Db,
  projectId: number,
  id: number,
  userId: number | null,
): Promise<CachedDashboardView | undefined> {
  if (!isRowId(id)) return undefined;
  const [row] = await cachedView(db).execute({ id, projectId, userId });
  if (!row) return undefined;
  for (const tile of row.tiles) tile.last_modified_at = isoTimestamp(tile.last_modified_at);
  for (const { insight } of row.insights) {
    // JSON writes a timestamptz as text: the row's dates as Drizzle reads them.
    insight.created_at = new Date(insight.created_at);
    insight.last_modified_at = new Date(insight.last_modified_at);
    insight.updated_at = new Date(insight.updated_at);
  }
  return row;
}
