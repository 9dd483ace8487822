import type { components } from '../../generated/api.js';
import { changeDashboard, moveDashboardTile } from './update.js';
import { createDashboard, createFromTemplateJson, createUnlisted } from './create.js';
import { refreshMode } from '../insights/cache.js';
import { cacheContext } from '../insights/handlers.js';
import { dashboardContext } from '../insights/load.js';
import { presentDashboardPage, readDashboard } from './present.js';
import { normalizeTags } from '../core/tags.js';
import { streamTiles } from './stream.js';
import { loadDashboard, viewerOf } from './load.js';
import type { DashboardInput } from './queries.js';
import { jsonPage, sendJsonText } from '../http/json-text.js';
import type { JsonText } from '../core/json-text.js';
import type { RequestOf, SomeHandlers } from '../http/types.js';
import { pick } from '../core/pick.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';

type Schemas = components['schemas'];
const WRITABLE = [
  'name',
  'description',
  'pinned',
  'deleted',
  'restriction_level',
  'filters',
  'breakdown_colors',
  'data_color_theme_id',
] as const;

/** The writable fields of a create or update body, as column values. */
function dashboardInput(body: Schemas['DashboardRequest'] | Schemas['PatchedDashboardRequest']): DashboardInput {
  const date = (v: string | null | undefined) => (v === undefined ? undefined : v === null ? null : new Date(v));
  const input: DashboardInput = pick(body, WRITABLE);
  if (body.last_accessed_at !== undefined) input.last_accessed_at = date(body.last_accessed_at)!;
  if (body.last_refresh !== undefined) input.last_refresh = date(body.last_refresh)!;
  return input;
}

/** PATCH and PUT: PostHog's PUT requires no field either, so both leave omitted fields as they are. */
async function updateHandler(req: RequestOf<'dashboards_partial_update'>): Promise<Schemas['Dashboard']> {
  const body = req.body ?? {};
  // Only a body setting `deleted` to false reaches a deleted dashboard, to restore it.
  const dashboard = await loadDashboard(req.server.db, req.tenant.project_id, req.params.id, {
    includeDeleted: body.deleted === false,
  });
  const input: DashboardInput = {
    ...dashboardInput(body),
    ...(body.tags ? { tags: normalizeTags(body.tags) } : {}),
    // PostHog only takes non-empty variables, so `{}` leaves the stored ones as they are.
    ...(body.variables && Object.keys(body.variables).length ? { variables: body.variables } : {}),
  };
  return changeDashboard(req.server.db, dashboard, viewerOf(req), {
    input,
    tiles: body.tiles ?? [],
    duplicateTiles: body.duplicate_tiles ?? [],
    restricting: body.restriction_level !== undefined,
    deleteInsights: body.deleted === true && body.delete_insights === true,
    results: { mode: 'force_cache', cache: cacheContext(req) },
  });
}

/** The dashboard a read names, with the read recorded in `last_accessed_at` as PostHog does (to the minute). */
async function retrieve(
  req: RequestOf<'dashboards_retrieve'> | RequestOf<'dashboards_stream_tiles_retrieve'>,
  id: number,
): Promise<Schemas['Dashboard'] | JsonText<Schemas['Dashboard']>> {
  const q = req.query as { refresh?: string; filters_override?: string; variables_override?: string };
  const overrides = await dashboardContext(req.server.db, req.tenant.project_id, q);
  const dashboard = await readDashboard(req.server.db, req.tenant.project_id, id, viewerOf(req), {
    mode: refreshMode(q.refresh),
    cache: cacheContext(req),
    filters: overrides?.filters,
    variables: overrides?.variables,
  });
  if (!dashboard) throw ApiError.notFound();
  return dashboard;
}

export const dashboardHandlers = {
  async dashboards_list(req, reply) {
    const page = pageOf(req.query);
    const tags = normalizeTags(req.query.tags);
    const filter = { tags, creationMode: req.query.creation_mode };
    const { count, results } = await presentDashboardPage(
      req.server.db,
      req.tenant.project_id,
      page,
      filter,
      viewerOf(req),
    );
    return sendJsonText(reply, jsonPage(req, page, count, results));
  },

  async dashboards_create(req, reply) {
    const body = req.body ?? {};
    const dashboard = await createDashboard(req.server.db, req.tenant.project_id, viewerOf(req), {
      input: dashboardInput(body),
      tags: body.tags,
      useTemplate: body.use_template,
      useDashboard: body.use_dashboard,
      deep: body.duplicate_tiles === true,
    });
    reply.code(201);
    return dashboard;
  },

  async dashboards_retrieve(req, reply) {
    const dashboard = await retrieve(req, req.params.id);
    return typeof dashboard === 'string' ? sendJsonText(reply, dashboard) : dashboard;
  },

  async dashboards_stream_tiles_retrieve(req, reply) {
    const read = await retrieve(req, req.params.id);
    const full = typeof read === 'string' ? (JSON.parse(read) as Schemas['Dashboard']) : read;
    const size = (req.query.layoutSize ?? req.query.layout_size) === 'xs' ? 'xs' : 'sm';
    return reply
      .type('text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache')
      .send(streamTiles(full, size));
  },

  dashboards_partial_update: updateHandler,
  dashboards_update: updateHandler,

  async dashboards_destroy(_req, reply) {
    // PostHog's ForbidDestroyModel: refused before the dashboard is even looked up, with no body.
    return reply.code(405).send() as never;
  },

  async dashboards_move_tile_partial_update(req) {
    const from = await loadDashboard(req.server.db, req.tenant.project_id, req.params.id);
    return moveDashboardTile(req.server.db, from, viewerOf(req), req.body.tile.id, req.body.toDashboard);
  },

  async dashboards_create_from_template_json_create(req) {
    return createFromTemplateJson(req.server.db, req.tenant.project_id, viewerOf(req), req.body.template);
  },

  async dashboards_create_unlisted_dashboard_create(req, reply) {
    const tag = req.body?.tag;
    if (!tag) throw ApiError.validation('tag', 'tag is required');
    const dashboard = await createUnlisted(req.server.db, req.tenant.project_id, viewerOf(req), tag);
    reply.code(201);
    return dashboard;
  },
} satisfies SomeHandlers;
