import type { FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import { requireEdit, requireRestrict, type Viewer } from '../dashboards/access.js';
import { permissionsOn, presentDashboard, presentDashboards } from '../dashboards/present.js';
import { normalizeTags } from '../dashboards/tags.js';
import { findTemplate, type DashboardTemplate } from '../dashboards/templates.js';
import type { Db } from '../db/client.js';
import { copyTiles, getTile, insertTiles, moveTile, updateTile, type NewTile } from '../db/queries/dashboard-tiles.js';
import {
  getDashboard,
  insertDashboard,
  listDashboards,
  updateDashboard,
  type DashboardInput,
  type DashboardRow,
} from '../db/queries/dashboards.js';
import { pick } from '../http/access.js';
import { ApiError } from '../http/errors.js';
import { pageOf, paginated } from '../http/pagination.js';
import type { SomeHandlers } from '../http/types.js';

type Schemas = components['schemas'];
const WRITABLE = ['name', 'description', 'pinned', 'deleted', 'restriction_level', 'filters'] as const;

export function viewerOf(req: FastifyRequest): Viewer {
  return { id: req.principal.user.id, level: req.tenant.level };
}

/** A dashboard of the request's project; any other id, or a deleted one unless asked for, is a 404. */
export async function loadDashboard(
  req: FastifyRequest,
  id: number,
  opts: { includeDeleted?: boolean; notFound?: string } = {},
): Promise<DashboardRow> {
  const row = await getDashboard(req.server.db, req.tenant.project_id!, id, opts);
  if (!row) throw ApiError.notFound(opts.notFound);
  return row;
}

function templateTiles(template: DashboardTemplate, userId: number): NewTile[] {
  return template.tiles.map((t) => ({ body: t.body, layouts: t.layouts, color: t.color, created_by_id: userId }));
}

/** Validates every tile change before anything is written, so a bad tile leaves the dashboard untouched. */
async function checkTiles(db: Db, dashboardId: number, tiles: Schemas['DashboardTileRequest'][]): Promise<void> {
  for (const [i, tile] of tiles.entries()) {
    if (tile.id === undefined) {
      if (!tile.text) throw ApiError.required(`tiles__${i}__text`);
    } else if (!(await getTile(db, dashboardId, tile.id))) {
      throw ApiError.validation(`tiles__${i}__id`, `Tile ${tile.id} is not on this dashboard.`, 'not_found');
    }
  }
}

async function applyTiles(db: Db, dashboardId: number, tiles: Schemas['DashboardTileRequest'][], userId: number): Promise<void> {
  for (const tile of tiles) {
    if (tile.id === undefined) {
      await insertTiles(db, dashboardId, [
        { body: tile.text!.body, layouts: tile.layouts, color: tile.color, deleted: tile.deleted, created_by_id: userId },
      ]);
      continue;
    }
    await updateTile(db, dashboardId, tile.id, {
      ...(tile.text ? { body: tile.text.body, last_modified_by_id: userId } : {}),
      ...pick(tile, ['layouts', 'color', 'deleted'] as const),
    });
  }
}

export const dashboardHandlers = {
  async dashboards_list(req) {
    const page = pageOf(req.query);
    const tags = normalizeTags(req.query.tags);
    const { count, rows } = await listDashboards(req.server.db, req.tenant.project_id!, page, tags);
    return paginated(req, page, count, await presentDashboards(req.server.db, rows, viewerOf(req)));
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
    const projectId = req.tenant.project_id!;
    const source = body.use_dashboard ? await getDashboard(req.server.db, projectId, body.use_dashboard) : undefined;
    if (body.use_dashboard && !source) throw ApiError.validation('use_dashboard', 'Invalid value provided');

    const input = pick(body, WRITABLE);
    const userId = req.principal.user.id;
    const dashboard = await req.server.db.transaction(async (tx) => {
      const row = await insertDashboard(tx, projectId, {
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
      if (template) await insertTiles(tx, row.id, templateTiles(template, userId));
      if (source) await copyTiles(tx, source.id, row.id);
      // Read in the transaction that wrote it: an answer that fails after the commit would tell the
      // client nothing was created, and its retry would create a second dashboard.
      return presentDashboard(tx as Db, row, viewerOf(req));
    });
    reply.code(201);
    return dashboard;
  },

  async dashboards_retrieve(req) {
    const dashboard = await loadDashboard(req, req.params.id);
    return presentDashboard(req.server.db, dashboard, viewerOf(req));
  },

  async dashboards_partial_update(req) {
    const body = req.body ?? {};
    // Only a body setting `deleted` to false reaches a deleted dashboard, to restore it.
    const dashboard = await loadDashboard(req, req.params.id, { includeDeleted: body.deleted === false });
    const viewer = viewerOf(req);
    const permissions = await permissionsOn(req.server.db, dashboard, viewer);
    requireEdit(permissions);
    if (body.restriction_level !== undefined) requireRestrict(permissions);
    const tiles = body.tiles ?? [];
    await checkTiles(req.server.db, dashboard.id, tiles);
    const input: DashboardInput = { ...pick(body, WRITABLE), ...(body.tags ? { tags: normalizeTags(body.tags) } : {}) };
    return req.server.db.transaction(async (tx) => {
      const row = await updateDashboard(tx, dashboard.id, input);
      await applyTiles(tx, dashboard.id, tiles, viewer.id);
      return presentDashboard(tx as Db, row, viewer);
    });
  },

  async dashboards_destroy(_req, reply) {
    // PostHog's ForbidDestroyModel: refused before the dashboard is even looked up, with no body.
    return reply.code(405).send() as never;
  },

  async dashboards_move_tile_partial_update(req) {
    const from = await loadDashboard(req, req.params.id);
    const viewer = viewerOf(req);
    requireEdit(await permissionsOn(req.server.db, from, viewer));
    const tile = await getTile(req.server.db, from.id, req.body.tile.id);
    if (!tile) throw ApiError.notFound();
    const to = await getDashboard(req.server.db, req.tenant.project_id!, req.body.toDashboard);
    if (!to) throw ApiError.notFound();
    requireEdit(
      await permissionsOn(req.server.db, to, viewer),
      "You don't have edit permissions for the destination dashboard.",
    );
    return req.server.db.transaction(async (tx) => {
      await moveTile(tx as Db, tile.id, to.id);
      return presentDashboard(tx as Db, from, viewer);
    });
  },

  async dashboards_create_from_template_json_create(req) {
    const { template } = req.body;
    const tiles = template.tiles ?? [];
    for (const [i, tile] of tiles.entries()) {
      if (tile.type !== 'TEXT') {
        throw ApiError.validation('template__tiles', `Unsupported tile type "${tile.type}": only TEXT tiles can be created.`);
      }
      if (tile.body === undefined) throw ApiError.required(`template__tiles__${i}__body`);
    }
    const userId = req.principal.user.id;
    const dashboard = await req.server.db.transaction(async (tx) => {
      const row = await insertDashboard(tx, req.tenant.project_id!, {
        name: template.template_name,
        description: template.dashboard_description ?? '',
        filters: template.dashboard_filters ?? {},
        tags: normalizeTags(template.tags),
        created_by_id: userId,
      });
      await insertTiles(
        tx,
        row.id,
        tiles.map((t) => ({ body: t.body!, layouts: t.layouts, color: t.color, created_by_id: userId })),
      );
      return presentDashboard(tx as Db, row, viewerOf(req));
    });
    return dashboard;
  },
} satisfies SomeHandlers;
