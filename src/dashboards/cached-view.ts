import { sql, type SQL } from 'drizzle-orm';
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
  held: false;
  /**
   * A digest of every row the read is made of (the dashboard, all its tiles, their insights, those
   * insights' tiles and dashboards, the cached answers found, the users, the project), by their row
   * versions (`xmin`, new on every write): the same digest, the same rows.
   */
  version: string;
  insights: TileInsight[];
  /** The project's test account filters, part of the key of a query that applies them. */
  test_account_filters: unknown[] | null;
}

/** A cached view at the version its caller holds: the rows are the ones it presented, and are not sent again. */
export interface HeldDashboardView extends Pick<DashboardView, 'stale' | 'is_shared' | 'privilege'> {
  held: true;
  version: string;
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

/**
 * One pass over the dashboard's tiles (deleted ones too): each tile's id and version with its insight's and
 * the answer's found under its key, and the ids of the insights and of the users the tiles and insights name.
 */
const tilePass = sql`(select string_agg(concat_ws(',', t.id, t.xmin, ti.xmin, q.xmin), ';' order by t.id) as s,
    array_agg(ti.id) as insights,
    array_agg(t.created_by_id) || array_agg(t.last_modified_by_id) || array_agg(ti.created_by_id)
      || array_agg(ti.last_modified_by_id) || "dashboards"."created_by_id" as users
  from ${dashboard_tiles} t
  left join lateral (select i.id, i.xmin, i.created_by_id, i.last_modified_by_id from ${insights} i
    where i.id = t.insight_id offset 0) ti on true
  left join ${query_cache} q on q.project_id = ${project} and q.cache_key = t.cache_key and q.expires_at > now()
  where t.dashboard_id = "dashboards"."id")`;
/**
 * The digest of the rows' versions: the dashboard, its tiles with their insights and answers, every tile placing
 * those insights with its dashboard, the users (a superset of the users shown) and the project. A lateral
 * subquery, fenced: pulled up, it would be computed again for every column that reads it.
 */
const versionJoin = sql`(select md5(concat_ws('|', "dashboards".xmin, tv.s,
    (select string_agg(concat_ws(',', it.id, it.xmin, id_.xmin), ';' order by it.id)
      from ${dashboard_tiles} it join ${dashboards} id_ on id_.id = it.dashboard_id
      where it.insight_id = any(tv.insights)),
    (select string_agg(concat_ws(',', u.id, u.xmin), ';' order by u.id) from ${users} u where u.id = any(tv.users)),
    (select p.xmin from ${projects} p where p.id = ${project}))) as v
  from ${tilePass} tv offset 0) vv`;
/** A column only when the caller does not hold the read presented at this version (else null). */
const unlessHeld = <T>(column: SQL<T>) =>
  sql<T | null>`case when vv.v = ${sql.placeholder('held')} then null else ${column} end`;

const cachedView = prepared('dashboard_cached_view', (db, name) => {
  const {
    tiles,
    users: viewUsers,
    ...columns
  } = dashboardViewColumns(
    sql`select v.id ${tileInsightsJoin}
      cross join lateral (values (ti.created_by_id), (ti.last_modified_by_id)) v(id) ${tileInsightsWhere}`,
  );
  return db
    .select({
      ...columns,
      version: sql<string>`vv.v`,
      tiles: unlessHeld(tiles),
      users: unlessHeld(viewUsers),
      insights: unlessHeld(
        sql<TileInsight[]>`coalesce((select json_agg(json_build_object('tile_id', t.id, 'key', t.cache_key,
            'insight', to_json(ti), 'tiles', ${insightTilesJson('ti')}, 'answer', ${answerJson}) order by t.id)
          ${tileInsightsJoin} ${tileInsightsWhere}), '[]'::json)`,
      ),
      test_account_filters: unlessHeld(
        sql<unknown[] | null>`(select p.test_account_filters from ${projects} p where p.id = ${project})`,
      ),
    })
    .from(dashboards)
    .crossJoinLateral(versionJoin)
    .where(viewedDashboard())
    .prepare(name);
});

async function readCachedView(db: Db, projectId: number, id: number, userId: number | null, held: string | null) {
  if (!isRowId(id)) return undefined;
  const [found] = await cachedView(db).execute({ id, projectId, userId, held });
  if (!found) return undefined;
  const { tiles, users, insights, test_account_filters, ...row } = found;
  if (tiles === null || users === null || insights === null) {
    const { version, stale, is_shared, privilege } = row;
    return { held: true, version, stale, is_shared, privilege } satisfies HeldDashboardView;
  }
  for (const tile of tiles) tile.last_modified_at = isoTimestamp(tile.last_modified_at);
  for (const { insight } of insights) {
    // JSON writes a timestamptz as text: the row's dates as Drizzle reads them.
    insight.created_at = new Date(insight.created_at);
    insight.last_modified_at = new Date(insight.last_modified_at);
    insight.updated_at = new Date(insight.updated_at);
  }
  return { ...row, held: false, tiles, users, insights, test_account_filters } satisfies CachedDashboardView;
}

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
  const view = await readCachedView(db, projectId, id, userId, null);
  // A read that holds no version is always sent the rows.
  return view?.held === false ? view : undefined;
}

/**
 * `getCachedDashboardView` for a caller holding the read presented at version `held`: while the rows are
 * still at that version, only what the read's permissions and its record of access come from besides them.
 */
export async function checkHeldDashboardView(
  db: Db,
  projectId: number,
  id: number,
  userId: number | null,
  held: string,
): Promise<CachedDashboardView | HeldDashboardView | undefined> {
  return readCachedView(db, projectId, id, userId, held);
}
