import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { dashboard_tiles, dashboards, insights, projects, query_cache, users } from '../db/schema/index.js';
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
  /**
   * A digest of every row the read is made of (the dashboard, all its tiles, their insights, those
   * insights' tiles and dashboards, the cached answers found, the users, the project), by their row
   * versions (`xmin`, new on every write): the same digest, the same rows.
   */
  version: string;
  /** Null when the version is the one the caller said it holds: it has them presented already. */
  insights: TileInsight[] | null;
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

/** A tile's rows' versions, with its insight's, the answer's and the insight's other tiles' and dashboards'. */
const tileVersions = sql`(select string_agg(concat_ws(',', t.id, t.xmin, ti.xmin, q.xmin,
    (select string_agg(concat_ws(',', it.id, it.xmin, id_.id, id_.xmin), ';' order by it.id)
      from ${dashboard_tiles} it join ${dashboards} id_ on id_.id = it.dashboard_id where it.insight_id = ti.id)),
    ';' order by t.id)
  from ${dashboard_tiles} t
  left join lateral (select i.id, i.xmin from ${insights} i where i.id = t.insight_id offset 0) ti on true
  left join ${query_cache} q on q.project_id = ${project} and q.cache_key = t.cache_key and q.expires_at > now()
  where t.dashboard_id = "dashboards"."id")`;
/** The versions of every user a tile or its insight names (a superset of the users shown). */
const userVersions = sql`(select string_agg(concat_ws(',', u.id, u.xmin), ';' order by u.id) from ${users} u
  where u.id in (select "dashboards"."created_by_id"
    union select v.id from ${dashboard_tiles} t
      left join ${insights} ui on ui.id = t.insight_id
      cross join lateral (values (t.created_by_id), (t.last_modified_by_id), (ui.created_by_id),
        (ui.last_modified_by_id)) v(id)
      where t.dashboard_id = "dashboards"."id"))`;
const version = sql`md5(concat_ws('|', "dashboards".xmin, ${tileVersions}, ${userVersions},
  (select p.xmin from ${projects} p where p.id = ${project})))`;

const cachedView = prepared('dashboard_cached_view', (db, name) =>
  db
    .select({
      ...dashboardViewColumns(
        sql`select v.id ${tileInsightsJoin}
          cross join lateral (values (ti.created_by_id), (ti.last_modified_by_id)) v(id) ${tileInsightsWhere}`,
      ),
      // The insights only when the caller does not hold the read presented at this version.
      rendered: sql<{ version: string; insights: TileInsight[] | null }>`(select json_build_object(
          'version', vv.v, 'insights', case when vv.v = ${sql.placeholder('held')} then null else
            coalesce((select json_agg(json_build_object('tile_id', t.id, 'key', t.cache_key,
              'insight', to_json(ti), 'tiles', ${insightTilesJson('ti')}, 'answer', ${answerJson}) order by t.id)
            ${tileInsightsJoin} ${tileInsightsWhere}), '[]'::json) end)
        from (select ${version} as v) vv)`,
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
  held: string | null = null,
): Promise<CachedDashboardView | undefined> {
  if (!isRowId(id)) return undefined;
  const [found] = await cachedView(db).execute({ id, projectId, userId, held });
  if (!found) return undefined;
  const { rendered, ...row } = found;
  for (const tile of row.tiles) tile.last_modified_at = isoTimestamp(tile.last_modified_at);
  for (const { insight } of rendered.insights ?? []) {
    // JSON writes a timestamptz as text: the row's dates as Drizzle reads them.
    insight.created_at = new Date(insight.created_at);
    insight.last_modified_at = new Date(insight.last_modified_at);
    insight.updated_at = new Date(insight.updated_at);
  }
  return { ...row, version: rendered.version, insights: rendered.insights };
}
