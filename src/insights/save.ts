import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import { ApiError } from '../core/errors.js';
import { pick } from '../core/pick.js';
import { dashboardExtras } from '../dashboard-access/queries.js';
import { dashboardPermissions, Privilege, type Viewer } from '../dashboard-access/rules.js';
import { normalizeTags } from '../core/tags.js';
import {
  dashboardsByIds,
  deleteInsightTiles,
  insertInsight,
  insightTiles,
  setInsightDashboards,
  updateInsight,
  type InsightChange,
  type InsightRow,
} from './queries.js';
import { insightPermissions } from './present.js';
import { checkQuery } from './query-node.js';

type Body = components['schemas']['InsightRequest'];

/** PostHog's Insight.MATERIAL_INSIGHT_FIELDS: a change to one of them moves `last_modified_at`. */
const MATERIAL = ['name', 'description', 'filters', 'query', 'tags', 'derived_name'] as const;
const WRITABLE = ['name', 'derived_name', 'description', 'filters', 'order', 'deleted', 'saved', 'favorited'] as const;

/**
 * The dashboards a body names, checked as PostHog does: an id that names no dashboard is a 400 on
 * `dashboards`, another project's dashboard a 400 "Dashboard not found", a dashboard the caller may only
 * view a 403. Deleted dashboards are dropped.
 */
async function checkDashboards(db: Db, projectId: number, ids: number[], viewer: Viewer): Promise<number[]> {
  const found = await dashboardsByIds(db, ids);
  for (const id of ids) {
    if (!found.has(id)) {
      throw ApiError.validation('dashboards', `Invalid pk "${id}" - object does not exist.`, 'does_not_exist');
    }
    if (found.get(id)!.project_id !== projectId) throw ApiError.validation(null, 'Dashboard not found', 'invalid');
  }
  const live = [...new Set(ids)].filter((id) => !found.get(id)!.deleted);
  const extras = await dashboardExtras(db, live, viewer.id);
  for (const id of live) {
    const d = found.get(id)!;
    if (!dashboardPermissions(d, viewer, extras.get(id)?.privilege ?? null).can_edit) {
      throw ApiError.permissionDenied(`You don't have permission to add insights to dashboard: ${id}`);
    }
  }
  return live;
}

function insightChange(body: Body): InsightChange {
  return {
    ...pick(body, WRITABLE),
    ...(body.query !== undefined ? { query: body.query } : {}),
    ...(body.tags ? { tags: normalizeTags(body.tags) } : {}),
  };
}

/** Creates an insight, its query checked and compiled first, on the dashboards it names. */
export async function createInsight(db: Db, projectId: number, viewer: Viewer, body: Body): Promise<InsightRow> {
  if (body.query) await checkQuery(projectId, body.query);
  const dashboards = body.dashboards ? await checkDashboards(db, projectId, body.dashboards, viewer) : [];
  return db.transaction(async (tx) => {
    const row = await insertInsight(tx, projectId, {
      ...insightChange(body),
      created_by_id: viewer.id,
      last_modified_by_id: viewer.id,
    });
    if (dashboards.length) await setInsightDashboards(tx, projectId, row.id, dashboards, viewer.id);
    return row;
  });
}

/**
 * Updates an insight as PostHog's serializer does, for a viewer who may edit it (the dashboards it is on
 * decide): deleting it takes it off every dashboard, otherwise `dashboards` replaces the dashboards it is on;
 * a material change records who made it.
 */
export async function changeInsight(
  db: Db,
  projectId: number,
  viewer: Viewer,
  insight: InsightRow,
  body: Body,
): Promise<InsightRow> {
  const tiles = (await insightTiles(db, [insight])).get(insight.id)!;
  if ((await insightPermissions(db, insight, tiles, viewer)).effective_privilege_level < Privilege.CAN_EDIT) {
    throw ApiError.permissionDenied("You don't have edit permissions for this insight.");
  }
  if (body.query) await checkQuery(projectId, body.query);
  const deleting = body.deleted === true;
  const dashboards =
    !deleting && body.dashboards ? await checkDashboards(db, projectId, body.dashboards, viewer) : undefined;
  const material = MATERIAL.some((f) => body[f] !== undefined);
  return db.transaction(async (tx) => {
    const row = await updateInsight(
      tx,
      projectId,
      insight.id,
      { ...insightChange(body), ...(material ? { last_modified_by_id: viewer.id } : {}) },
      material,
    );
    if (!row) throw ApiError.notFound();
    if (deleting) await deleteInsightTiles(tx, projectId, insight.id);
    else if (dashboards) await setInsightDashboards(tx, projectId, insight.id, dashboards, viewer.id);
    return row;
  });
}
