import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import { Level } from '../core/levels.js';
import { dashboardExtras } from '../dashboard-access/queries.js';
import { dashboardPermissions, type Viewer } from '../dashboard-access/rules.js';
import { getUsers } from '../users/queries.js';
import { cachedAnswers, type CacheContext, type CachedResult, type RefreshMode } from './cache.js';
import { withDashboardFilters } from './dashboard-filters.js';
import { getInsightsWithTiles, insightTiles, type InsightRow, type InsightTile } from './queries.js';
import { runnableNode } from './query-node.js';
import { serializeInsight, type InsightPermissions } from './serialize.js';

type Schemas = components['schemas'];

/** A signed-in viewer, or the anonymous reader of a shared link. */
export type InsightAudience = Viewer | 'shared';

/** PostHog's read-only view of a shared insight. */
const SHARED: InsightPermissions = {
  effective_restriction_level: 37,
  effective_privilege_level: 21,
  user_access_level: null,
};

/**
 * PostHog's insight permissions: the insight is as restricted as the most restricted dashboard it is on,
 * and editable by whoever may edit one of those restricted dashboards (or by anyone when none is).
 */
export async function insightPermissions(
  db: Db,
  row: Pick<InsightRow, 'created_by_id'>,
  tiles: InsightTile[],
  audience: InsightAudience,
): Promise<InsightPermissions> {
  if (audience === 'shared') return SHARED;
  const restricted = tiles.filter((t) => t.restriction_level > 21);
  const manager = row.created_by_id === audience.id || audience.level >= Level.ADMIN;
  if (!restricted.length)
    return {
      effective_restriction_level: 21,
      effective_privilege_level: 37,
      user_access_level: manager ? 'manager' : 'editor',
    };
  const extras = await dashboardExtras(
    db,
    restricted.map((t) => t.dashboard_id),
    audience.id,
  );
  const canEdit = restricted.some(
    (t) => dashboardPermissions(t, audience, extras.get(t.dashboard_id)?.privilege ?? null).can_edit,
  );
  return {
    effective_restriction_level: 37,
    effective_privilege_level: canEdit ? 37 : 21,
    user_access_level: canEdit ? (manager ? 'manager' : 'editor') : 'viewer',
  };
}

export interface PresentOptions {
  audience: InsightAudience;
  /** How to get results; undefined (or no `cache`) leaves them out (`basic`). */
  mode: RefreshMode | undefined;
  cache: CacheContext | undefined;
  /** A dashboard's filters and variables (or their overrides), when read in its context. */
  dashboard?: { filters: Record<string, unknown>; variables: Record<string, unknown> } | undefined;
}

/** The query an insight shows and runs in a context: the stored one, with a dashboard's filters applied. */
export function effectiveQuery(
  row: InsightRow,
  dashboard: PresentOptions['dashboard'],
): Record<string, unknown> | null {
  if (!row.query) return null;
  return dashboard ? withDashboardFilters(row.query, dashboard.filters, dashboard.variables) : row.query;
}

/**
 * The insights' results per `mode`, by insight id: none for one without a query that can run (a legacy
 * `filters` insight). What the cache holds for all of them is read at once.
 */
export async function insightResults(
  queries: Map<number, Record<string, unknown> | null>,
  mode: RefreshMode,
  cache: CacheContext,
): Promise<Map<number, CachedResult>> {
  const runnable = [...queries].flatMap(([id, query]) => (query ? [{ id, node: runnableNode(query).node }] : []));
  const results = await cachedAnswers(
    cache,
    runnable.map((r) => r.node),
    mode,
  );
  return new Map(runnable.map((r, i) => [r.id, results[i]!]));
}

/**
 * Insights as `audience` sees them, with their dashboards, users and results (per the options); their
 * tiles are read here unless the caller read them with the rows. The users and the results are read
 * side by side.
 */
export async function presentInsights(
  db: Db,
  rows: InsightRow[],
  opts: PresentOptions,
  readTiles?: Map<number, InsightTile[]>,
): Promise<Schemas['Insight'][]> {
  const tiles = readTiles ?? (await insightTiles(db, rows));
  const userIds = rows
    .flatMap((r) => [r.created_by_id, r.last_modified_by_id])
    .filter((id): id is number => id !== null);
  const queries = new Map(rows.map((row) => [row.id, effectiveQuery(row, opts.dashboard)]));
  const [users, results] = await Promise.all([
    getUsers(db, userIds),
    opts.mode && opts.cache ? insightResults(queries, opts.mode, opts.cache) : new Map<number, CachedResult>(),
  ]);
  const out: Schemas['Insight'][] = [];
  for (const row of rows) {
    const own = tiles.get(row.id) ?? [];
    const permissions = await insightPermissions(db, row, own, opts.audience);
    out.push(
      serializeInsight(row, {
        users,
        tiles: own,
        permissions,
        result: results.get(row.id),
        query: queries.get(row.id)!,
      }),
    );
  }
  return out;
}

export async function presentInsight(db: Db, row: InsightRow, opts: PresentOptions): Promise<Schemas['Insight']> {
  const [one] = await presentInsights(db, [row], opts);
  return one!;
}

/** The live insights of a dashboard's insight tiles, presented in the dashboard's context, by id. */
export async function tileInsights(
  db: Db,
  projectId: number,
  insightIds: number[],
  opts: PresentOptions,
): Promise<Map<number, Schemas['Insight']>> {
  const { rows, tiles } = await getInsightsWithTiles(db, projectId, [...new Set(insightIds)]);
  const presented = await presentInsights(db, rows, opts, tiles);
  return new Map(presented.map((i) => [i.id, i]));
}
