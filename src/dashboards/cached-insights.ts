import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import type { JsonText } from '../core/json-text.js';
import { cacheFieldsOf, cacheKey, wantsTestAccounts, type CacheContext } from '../insights/cache.js';
import { countHit } from '../insights/cache-queries.js';
import { effectiveQuery, insightPermissions, type InsightAudience } from '../insights/present.js';
import { runnableNode } from '../insights/query-node.js';
import { insightText } from '../insights/serialize.js';
import type { CachedDashboardView } from './cached-view.js';

type Insight = components['schemas']['Insight'];

/**
 * A plain read's insight tiles (PostHog's default refresh, which serves the cache and computes nothing)
 * from the cached view, as JSON text by insight id, their answers spliced in as PostgreSQL wrote them.
 * Undefined, for the general path, unless every tile's stored key is the key its query gives now (the
 * dashboard's or the read's filters and variables applied, the project's timezone and test account
 * filters): an answer is served only for the query it was computed for, and the view read it in the
 * project's own cache.
 */
export async function cachedTileInsights(
  db: Db,
  view: CachedDashboardView,
  opts: {
    audience: InsightAudience;
    cache: CacheContext;
    dashboard: { filters: Record<string, unknown>; variables: Record<string, unknown> };
  },
): Promise<{ texts: Map<number, JsonText<Insight>>; hits: string[]; keepable: boolean } | undefined> {
  const { projectId, timezone } = opts.cache;
  const checked = [];
  for (const tile of view.insights) {
    const query = effectiveQuery(tile.insight, opts.dashboard);
    let fields: ReturnType<typeof cacheFieldsOf> | undefined;
    if (query) {
      const { node } = runnableNode(query);
      const testAccounts = wantsTestAccounts(node) ? (view.test_account_filters ?? []) : null;
      const key = cacheKey(projectId, timezone, node, testAccounts);
      if (tile.key !== key) return undefined;
      fields = cacheFieldsOf(node, key, timezone);
    }
    checked.push({ tile, query, fields });
  }
  const users = new Map(view.users.map((u) => [u.id, u]));
  const out = new Map<number, JsonText<Insight>>();
  const hits: string[] = [];
  // An insight on a restricted dashboard has its permissions read from collaborators, no row of the view.
  let keepable = true;
  for (const { tile, query, fields } of checked) {
    const row = tile.insight;
    if (out.has(row.id)) continue;
    const at = tile.answer ? new Date(tile.answer.at) : null;
    const result = fields?.(at, at !== null);
    if (at && result) {
      countHit(db, projectId, result.cache_key);
      hits.push(result.cache_key);
    }
    if (tile.tiles.some((t) => t.restriction_level > 21)) keepable = false;
    const permissions = await insightPermissions(db, row, tile.tiles, opts.audience);
    const ctx = { users, tiles: tile.tiles, permissions, query, result: result && { ...result, answer: null } };
    out.set(row.id, insightText(row, ctx, tile.answer?.fields ?? null));
  }
  return { texts: out, hits, keepable };
}
