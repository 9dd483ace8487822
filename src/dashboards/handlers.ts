import type { components } from '../../generated/api.js';
import { requireEdit } from '../dashboard-access/rules.js';
import { changeDashboard } from './update.js';
import { refreshMode } from '../insights/cache.js';
import { cacheContext } from '../insights/handlers.js';
import { dashboardContext } from '../insights/load.js';
import { permissionsOn, presentDashboard, presentDashboardPage, readDashboard } from './present.js';
import { normalizeTags } from '../core/tags.js';
import { findTemplate, findUnlistedTemplate, type DashboardTemplate } from './templates.js';
import { streamTiles } from './stream.js';
import { loadDashboard, viewerOf } from './load.js';
import { duplicateTiles } from './duplicate.js';
import { getTile, insertTiles, moveTile, type NewTile } from './tile-queries.js';
import { findUnlisted, getDashboard, insertDashboard, lockProjectForUnlisted, type DashboardInput } from './queries.js';
import { jsonPage, sendJsonText } from '../http/json-text.js';
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

function templateTiles(template: DashboardTemplate, userId: number): NewTile[] {
  return template.tiles.map((t) => ({ body: t.body, layouts: t.layouts, color: t.color, created_by_id: userId }));
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
): Promise<Schemas['Dashboard']> {
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
    if (body.use_dashboard && body.use_template) {
      throw ApiError.validation(null, '`use_dashboard` and `use_template` cannot be used together');
    }
    const template = body.use_template ? findTemplate(body.use_template) : undefined;
    if (body.use_template && !template) {
      throw ApiError.validation('use_template', `Invalid template provided: ${body.use_template}`);
    }
    const projectId = req.tenant.project_id;
    const source = body.use_dashboard ? await getDashboard(req.server.db, projectId, body.use_dashboard) : undefined;
    if (body.use_dashboard && !source) throw ApiError.validation('use_dashboard', 'Invalid value provided');

    const input = dashboardInput(body);
    const userId = req.principal.user.id;
    const dashboard = await req.server.db.transaction(async (tx) => {
      const row = await insertDashboard(tx, projectId, {
        // A duplicate takes its source's variables and colours, as PostHog copies them.
        ...(source
          ? {
              variables: source.variables,
              breakdown_colors: source.breakdown_colors,
              data_color_theme_id: source.data_color_theme_id,
            }
          : {}),
        ...input,
        name: template && !input.name ? template.template_name : input.name,
        description: input.description || template?.dashboard_description || '',
        filters: input.filters ?? template?.dashboard_filters ?? source?.filters ?? {},
        tags: normalizeTags(body.tags ?? template?.tags),
        creation_mode: template ? 'template' : source ? 'duplicate' : 'default',
        created_by_id: userId,
        use_template: body.use_template ?? '',
        use_dashboard: source?.id ?? null,
      });
      if (template) await insertTiles(tx, projectId, row.id, templateTiles(template, userId));
      const deep = body.duplicate_tiles === true;
      if (source && !(await duplicateTiles(tx, projectId, source.id, row.id, { deep, userId }))) {
        throw ApiError.validation('use_dashboard', 'Invalid value provided');
      }
      // Read in the transaction that wrote it: an answer that fails after the commit would tell the
      // client nothing was created, and its retry would create a second dashboard.
      return presentDashboard(tx, row, viewerOf(req));
    });
    reply.code(201);
    return dashboard;
  },

  async dashboards_retrieve(req) {
    return retrieve(req, req.params.id);
  },

  async dashboards_stream_tiles_retrieve(req, reply) {
    const full = await retrieve(req, req.params.id);
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
    const viewer = viewerOf(req);
    requireEdit(await permissionsOn(req.server.db, from, viewer));
    const tile = await getTile(req.server.db, from.id, req.body.tile.id);
    if (!tile) throw ApiError.notFound();
    const to = await getDashboard(req.server.db, req.tenant.project_id, req.body.toDashboard);
    if (!to) throw ApiError.notFound();
    requireEdit(
      await permissionsOn(req.server.db, to, viewer),
      "You don't have edit permissions for the destination dashboard.",
    );
    return req.server.db.transaction(async (tx) => {
      const moved = await moveTile(tx, req.tenant.project_id, { id: tile.id, from: from.id, to: to.id });
      if (!moved) throw ApiError.notFound();
      return presentDashboard(tx, from, viewer);
    });
  },

  async dashboards_create_from_template_json_create(req) {
    const { template } = req.body;
    const projectId = req.tenant.project_id;
    const tiles = template.tiles ?? [];
    // DECISIONS.md: only TEXT tiles are made from a template document; any other type is refused.
    for (const [i, tile] of tiles.entries()) {
      if (tile.type !== 'TEXT') {
        throw ApiError.validation(
          'template__tiles',
          `Unsupported tile type "${tile.type}": only TEXT tiles can be created.`,
        );
      }
      if (tile.body === undefined) throw ApiError.required(`template__tiles__${i}__body`);
    }
    const userId = req.principal.user.id;
    const dashboard = await req.server.db.transaction(async (tx) => {
      const row = await insertDashboard(tx, projectId, {
        name: template.template_name,
        description: template.dashboard_description ?? '',
        filters: template.dashboard_filters ?? {},
        tags: normalizeTags(template.tags),
        created_by_id: userId,
      });
      const made: NewTile[] = tiles.map((t) => ({
        body: t.body!,
        layouts: t.layouts,
        color: t.color,
        created_by_id: userId,
      }));
      await insertTiles(tx, projectId, row.id, made);
      return presentDashboard(tx, row, viewerOf(req));
    });
    return dashboard;
  },

  async dashboards_create_unlisted_dashboard_create(req, reply) {
    const tag = req.body?.tag;
    if (!tag) throw ApiError.validation('tag', 'tag is required');
    const template = findUnlistedTemplate(tag);
    if (!template) throw ApiError.validation('tag', `Unknown template tag: ${tag}`);
    const projectId = req.tenant.project_id;
    const userId = req.principal.user.id;
    const dashboard = await req.server.db.transaction(async (tx) => {
      await lockProjectForUnlisted(tx, projectId);
      if (await findUnlisted(tx, projectId, tag)) {
        throw new ApiError(409, 'invalid_request', 'conflict', `Unlisted dashboard with tag '${tag}' already exists`);
      }
      const row = await insertDashboard(tx, projectId, {
        name: template.template_name,
        description: template.dashboard_description,
        // PostHog marks the filters with the template's version, for later template upgrades.
        filters: { ...template.dashboard_filters, __template_version: 1 },
        tags: normalizeTags(template.tags),
        creation_mode: 'unlisted',
        created_by_id: userId,
      });
      await insertTiles(tx, req.tenant.project_id, row.id, templateTiles(template, userId));
      return presentDashboard(tx, row, viewerOf(req));
    });
    reply.code(201);
    return dashboard;
  },
} satisfies SomeHandlers;
