import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import { ApiError } from '../core/errors.js';
import { normalizeTags } from '../core/tags.js';
import type { Viewer } from '../dashboard-access/rules.js';
import { presentDashboard } from './present.js';
import { findUnlisted, getDashboard, insertDashboard, lockProjectForUnlisted, type DashboardInput } from './queries.js';
import { insertTiles, type NewTile } from './tile-queries.js';
import { duplicateTiles } from './duplicate.js';
import { findTemplate, findUnlistedTemplate, type DashboardTemplate } from './templates.js';

type Schemas = components['schemas'];
type Dashboard = Schemas['Dashboard'];

function templateTiles(template: DashboardTemplate, userId: number): NewTile[] {
  return template.tiles.map((t) => ({ body: t.body, layouts: t.layouts, color: t.color, created_by_id: userId }));
}

export interface NewDashboard {
  input: DashboardInput;
  tags: string[] | undefined;
  /** PostHog's `use_template`: a template's name, tags and tiles. */
  useTemplate: string | undefined;
  /** PostHog's `use_dashboard`: the dashboard to duplicate, with its tiles. */
  useDashboard: number | null | undefined;
  /** With `useDashboard`, its insights are copied too instead of shared. */
  deep: boolean;
}

/**
 * A dashboard, empty, from a template or duplicated from another of the project, written with its tiles
 * in one transaction and answered from it.
 */
export async function createDashboard(
  db: Db,
  projectId: number,
  viewer: Viewer,
  req: NewDashboard,
): Promise<Dashboard> {
  if (req.useDashboard && req.useTemplate) {
    throw ApiError.validation(null, '`use_dashboard` and `use_template` cannot be used together');
  }
  const template = req.useTemplate ? findTemplate(req.useTemplate) : undefined;
  if (req.useTemplate && !template) {
    throw ApiError.validation('use_template', `Invalid template provided: ${req.useTemplate}`);
  }
  const source = req.useDashboard ? await getDashboard(db, projectId, req.useDashboard) : undefined;
  if (req.useDashboard && !source) throw ApiError.validation('use_dashboard', 'Invalid value provided');
  const { input } = req;
  return db.transaction(async (tx) => {
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
      tags: normalizeTags(req.tags ?? template?.tags),
      creation_mode: template ? 'template' : source ? 'duplicate' : 'default',
      created_by_id: viewer.id,
      use_template: req.useTemplate ?? '',
      use_dashboard: source?.id ?? null,
    });
    if (template) await insertTiles(tx, projectId, row.id, templateTiles(template, viewer.id));
    if (source && !(await duplicateTiles(tx, projectId, source.id, row.id, { deep: req.deep, userId: viewer.id }))) {
      throw ApiError.validation('use_dashboard', 'Invalid value provided');
    }
    // Read in the transaction that wrote it: an answer that fails after the commit would tell the
    // client nothing was created, and its retry would create a second dashboard.
    return presentDashboard(tx, row, viewer);
  });
}

/** A dashboard from a template document; DECISIONS.md: only its TEXT tiles can be made, any other type is refused. */
export async function createFromTemplateJson(
  db: Db,
  projectId: number,
  viewer: Viewer,
  template: Schemas['DashboardFromTemplateRequest']['template'],
): Promise<Dashboard> {
  const tiles = template.tiles ?? [];
  for (const [i, tile] of tiles.entries()) {
    if (tile.type !== 'TEXT') {
      throw ApiError.validation(
        'template__tiles',
        `Unsupported tile type "${tile.type}": only TEXT tiles can be created.`,
      );
    }
    if (tile.body === undefined) throw ApiError.required(`template__tiles__${i}__body`);
  }
  return db.transaction(async (tx) => {
    const row = await insertDashboard(tx, projectId, {
      name: template.template_name,
      description: template.dashboard_description ?? '',
      filters: template.dashboard_filters ?? {},
      tags: normalizeTags(template.tags),
      created_by_id: viewer.id,
    });
    const made: NewTile[] = tiles.map((t) => ({
      body: t.body!,
      layouts: t.layouts,
      color: t.color,
      created_by_id: viewer.id,
    }));
    await insertTiles(tx, projectId, row.id, made);
    return presentDashboard(tx, row, viewer);
  });
}

/** The project's one dashboard of an unlisted template (PostHog's `create_unlisted_dashboard`); a second is a 409. */
export async function createUnlisted(db: Db, projectId: number, viewer: Viewer, tag: string): Promise<Dashboard> {
  const template = findUnlistedTemplate(tag);
  if (!template) throw ApiError.validation('tag', `Unknown template tag: ${tag}`);
  return db.transaction(async (tx) => {
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
      created_by_id: viewer.id,
    });
    await insertTiles(tx, projectId, row.id, templateTiles(template, viewer.id));
    return presentDashboard(tx, row, viewer);
  });
}
