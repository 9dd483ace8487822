import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import type { Page } from '../core/paging.js';
import type { CreationMode } from '../db/schema/index.js';
import { dashboardExtras } from '../dashboard-access/queries.js';
import { getDashboardView, listDashboards, touchDashboard, type DashboardRow } from './queries.js';
import { liveTiles, storeTileKeys, type TileView } from './tile-queries.js';
import { checkHeldDashboardView, getCachedDashboardView } from './cached-view.js';
import { cachedTileInsights } from './cached-insights.js';
import { heldRead, holdRead } from './read-memo.js';
import { Lru } from '../core/lru.js';
import { countHit } from '../insights/cache-queries.js';
import type { CacheContext, RefreshMode } from '../insights/cache.js';
import { tileInsights } from '../insights/present.js';
import { getUsers } from '../users/queries.js';
import { accessControlVersion, dashboardText, serializeDashboard, tileView } from './serialize.js';
import { withFields, type JsonText } from '../core/json-text.js';
import {
  dashboardPermissions,
  SHARED_VIEW,
  type DashboardPermissions,
  type Viewer,
} from '../dashboard-access/rules.js';

type Schemas = components['schemas'];

/** A signed-in viewer, or the anonymous reader of a shared link. */
export type Audience = Viewer | 'shared';

/**
 * How a read shows its insight tiles' results: PostHog's `refresh` mode (none: no results) with the
 * process's query engine, and the read's filters/variables overrides of the dashboard's own.
 */
export interface TileResults {
  mode: RefreshMode | undefined;
  cache: CacheContext | undefined;
  filters?: Record<string, unknown> | undefined;
  variables?: Record<string, unknown> | undefined;
}

async function insightsOf(
  db: Db,
  d: DashboardRow,
  tiles: Pick<TileView, 'insight_id'>[],
  audience: Audience,
  results: TileResults | undefined,
) {
  const ids = tiles.map((t) => t.insight_id).filter((id): id is number => id !== null);
  if (!ids.length) return new Map();
  return tileInsights(db, d.project_id, ids, {
    audience,
    mode: results?.mode,
    cache: results?.cache,
    dashboard: { filters: results?.filters ?? d.filters, variables: results?.variables ?? d.variables },
  });
}

/** The viewer's permissions on one dashboard (one query for their collaborator level). */
export async function permissionsOn(db: Db, dashboard: DashboardRow, viewer: Viewer): Promise<DashboardPermissions> {
  const extras = await dashboardExtras(db, [dashboard.id], viewer.id);
  return dashboardPermissions(dashboard, viewer, extras.get(dashboard.id)!.privilege);
}

/**
 * A page of the project's dashboards as `viewer` sees them, read in one statement: each item is the
 * JSON PostgreSQL wrote, with the permissions worked out here, by the rules a single read uses.
 */
export async function presentDashboardPage(
  db: Db,
  projectId: number,
  page: Page,
  filter: { tags: string[]; creationMode?: CreationMode | undefined },
  viewer: Viewer,
): Promise<{ count: number; results: JsonText<Schemas['DashboardBasic']>[] }> {
  const { count, rows } = await listDashboards(db, projectId, page, filter, viewer.id);
  const results = rows.map(({ json, created_by_id, restriction_level, privilege }) => {
    const p = dashboardPermissions({ created_by_id, restriction_level }, viewer, privilege);
    return withFields<Schemas['DashboardBasic']>(json, {
      effective_restriction_level: p.effective_restriction_level,
      effective_privilege_level: p.effective_privilege_level,
      user_access_level: p.user_access_level,
      access_control_version: accessControlVersion(restriction_level),
    });
  });
  return { count, results };
}

/** Whether a dashboard (`project:id`) had text tiles only when this process last read it plainly. */
const TEXT_ONLY = new Lru<string, boolean>(10_000);

/**
 * A read of one live dashboard of the project (retrieve, streamed tiles): one statement, plus the
 * write of `last_accessed_at` when the recorded one is older than ACCESS_RECORDED_EVERY. A plain read
 * whose tiles' stored keys still hold is answered from that statement alone, as JSON text, and kept: while
 * the rows it was made of keep their version, the same viewer's next plain read is answered with it again
 * (PostgreSQL then computes the rows' versions and sends no tile, user or insight). Any other read presents
 * the insights apart and stores the keys their results are cached under. Undefined when the project has no
 * such dashboard.
 */
export async function readDashboard(
  db: Db,
  projectId: number,
  id: number,
  viewer: Viewer,
  results?: TileResults,
): Promise<Schemas['Dashboard'] | JsonText<Schemas['Dashboard']> | undefined> {
  const cache = results?.cache;
  // A dashboard last read with text tiles only is read by the plain statement: the cached read's row versions
  // cost a text dashboard a third of its rate, and it has no answer to look up. Either way the answer is the same.
  const textOnly = TEXT_ONLY.get(`${projectId}:${id}`) === true;
  const plain = results?.mode === 'force_cache' && cache !== undefined && !textOnly;
  const request = plain
    ? JSON.stringify([projectId, id, viewer, cache.timezone, results.filters, results.variables])
    : '';
  const before = plain ? heldRead(db, request) : undefined;
  const found = before ? await checkHeldDashboardView(db, projectId, id, viewer.id, before.version) : undefined;
  if (before && found?.held) {
    const same = !found.stale && found.is_shared === before.is_shared && found.privilege === before.privilege;
    if (same) {
      for (const key of before.hits) countHit(db, projectId, key);
      return before.text;
    }
  }
  // Held but no longer the same (or not held): the rows, read again when the check did not send them.
  let cached = found?.held === false ? found : undefined;
  if (plain && !cached && (!before || found)) cached = await getCachedDashboardView(db, projectId, id, viewer.id);
  const view = plain ? cached : await getDashboardView(db, projectId, id, viewer.id);
  if (!view) return undefined;
  const { dashboard, tiles, is_shared, privilege } = view;
  if (results?.mode === 'force_cache' && cache !== undefined) {
    TEXT_ONLY.set(`${projectId}:${id}`, !tiles.some((t) => t.insight_id !== null));
  }
  if (view.stale) {
    const at = await touchDashboard(db, projectId, dashboard.id);
    // Written meanwhile by another read, or gone: either way the answer shows the dashboard as loaded.
    if (at) dashboard.last_accessed_at = at;
  }
  const users = new Map(view.users.map((u) => [u.id, u]));
  const permissions = dashboardPermissions(dashboard, viewer, privilege);
  if (cache && cached) {
    const context = {
      filters: results?.filters ?? dashboard.filters,
      variables: results?.variables ?? dashboard.variables,
    };
    const fast = await cachedTileInsights(db, cached, { audience: viewer, cache, dashboard: context });
    if (fast) {
      const text = dashboardText(dashboard, { is_shared, permissions, users, insights: fast.texts }, tiles);
      // A read that wrote `last_accessed_at` changed its rows: the next one presents them again.
      if (fast.keepable && !view.stale) {
        holdRead(db, request, { version: cached.version, is_shared, privilege, text, hits: fast.hits });
      }
      return text;
    }
  }
  const insights = await insightsOf(db, dashboard, tiles, viewer, results);
  // Keys under a read's overrides are not the dashboard's own: only a read in its own context stores them.
  if (cache && !results?.filters && !results?.variables) {
    const keys = tiles.flatMap((t) => {
      const key = t.insight_id === null ? null : insights.get(t.insight_id)?.cache_key;
      return key && key !== t.cache_key ? [{ id: t.id, key }] : [];
    });
    await storeTileKeys(db, projectId, dashboard.id, keys);
  }
  return serializeDashboard(dashboard, { is_shared, permissions, users, insights }, tiles);
}

/** The full dashboard, with its live tiles, as `audience` sees it. */
export async function presentDashboard(
  db: Db,
  d: DashboardRow,
  audience: Audience,
  results?: TileResults,
): Promise<Schemas['Dashboard']> {
  const [extras, tiles] = await Promise.all([
    dashboardExtras(db, [d.id], audience === 'shared' ? null : audience.id),
    liveTiles(db, [d.id]),
  ]);
  const dashboardTiles = tiles.get(d.id)!;
  const userIds = [d.created_by_id, ...dashboardTiles.flatMap((t) => [t.created_by_id, t.last_modified_by_id])];
  const users = await getUsers(
    db,
    userIds.filter((id): id is number => id !== null),
  );
  const { is_shared, privilege } = extras.get(d.id)!;
  const permissions = audience === 'shared' ? SHARED_VIEW : dashboardPermissions(d, audience, privilege);
  const views = dashboardTiles.map(tileView);
  const insights = await insightsOf(db, d, views, audience, results);
  return serializeDashboard(d, { is_shared, permissions, users, insights }, views);
}
