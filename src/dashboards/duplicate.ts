import type { Db } from '../db/client.js';
import { getInsights, insertInsight } from '../insights/queries.js';
import { dashboardInProject } from './queries.js';
import { insertTiles, liveTiles, type NewTile } from './tile-queries.js';

/**
 * PostHog's dashboard duplication (`use_dashboard`): each live tile of the source is copied onto the new
 * dashboard with its layouts and colour. Its insight is shared, or with `deep` (PostHog's
 * `duplicate_tiles: true`) copied first as a new insight of the project named "<name> (Copy)", as
 * PostHog's _deep_duplicate_tiles does; text tiles are copied either way. False when the source is not
 * a dashboard of the project.
 */
export async function duplicateTiles(
  db: Db,
  projectId: number,
  from: number,
  to: number,
  opts: { deep: boolean; userId: number },
): Promise<boolean> {
  if (!(await dashboardInProject(db, projectId, from))) return false;
  const tiles = (await liveTiles(db, [from])).get(from)!;
  const insights = await getInsights(
    db,
    projectId,
    tiles.flatMap((t) => (t.insight_id === null ? [] : [t.insight_id])),
  );
  const copies: NewTile[] = [];
  for (const tile of tiles) {
    const kept = {
      body: tile.body,
      layouts: tile.layouts,
      color: tile.color,
      created_by_id: tile.created_by_id,
      last_modified_by_id: tile.last_modified_by_id,
    };
    if (tile.insight_id === null) {
      copies.push(kept);
      continue;
    }
    const insight = insights.get(tile.insight_id);
    if (!insight) continue; // a tile of a deleted insight is not shown, nor copied
    if (!opts.deep) {
      copies.push({ ...kept, insight_id: insight.id });
      continue;
    }
    const copy = await insertInsight(db, projectId, {
      name: insight.name ? `${insight.name} (Copy)` : null,
      derived_name: insight.derived_name,
      description: insight.description,
      query: insight.query,
      filters: insight.filters,
      order: insight.order,
      saved: insight.saved,
      favorited: insight.favorited,
      tags: insight.tags,
      created_by_id: opts.userId,
      last_modified_by_id: opts.userId,
    });
    copies.push({ ...kept, insight_id: copy.id });
  }
  return insertTiles(db, projectId, to, copies);
}
