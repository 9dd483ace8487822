import type { components } from '../../generated/api.js';
import type { DashboardPermissions } from '../dashboard-access/rules.js';
import type { Collaborator } from './collaborator-queries.js';
import type { DashboardRow } from './queries.js';
import type { TileRow, TileView } from './tile-queries.js';
import type { UserBasicRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';
import type { JsonText } from '../core/json-text.js';

type Schemas = components['schemas'];

export interface DashboardContext<I = Schemas['Insight']> {
  is_shared: boolean;
  permissions: DashboardPermissions;
  users: Map<number, UserBasicRow>;
  /**
   * The insights of the insight tiles, as the audience sees them (with results per the read's `refresh`):
   * objects, or their JSON text for `dashboardText`.
   */
  insights?: Map<number, I>;
}

/** A tile whose insight is an object, or its JSON text. */
type TileOf<I> = Pick<Schemas['DashboardTile'], 'id' | 'text' | 'layouts' | 'color' | 'order'> & { insight: I | null };
type DashboardOf<I> = Omit<Schemas['Dashboard'], 'tiles'> & { tiles: TileOf<I>[] };

function userOrNull(users: Map<number, UserBasicRow>, id: number | null): Schemas['UserBasic'] | null {
  const user = id === null ? undefined : users.get(id);
  return user ? serializeUserBasic(user) : null;
}

/** PostHog's rule: a dashboard restricted to collaborators is still governed by the v1 permissions. */
export const accessControlVersion = (restrictionLevel: number): 'v1' | 'v2' => (restrictionLevel > 21 ? 'v1' : 'v2');

/** A list item: the document's list fields plus the ones PostHog's current DashboardBasic carries. */
export function serializeDashboardBasic(d: DashboardRow, ctx: DashboardContext<unknown>): Schemas['DashboardBasic'] {
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    pinned: d.pinned,
    created_at: d.created_at.toISOString(),
    created_by: userOrNull(ctx.users, d.created_by_id),
    is_shared: ctx.is_shared,
    deleted: d.deleted,
    creation_mode: d.creation_mode as Schemas['CreationMode'],
    tags: d.tags,
    restriction_level: d.restriction_level as Schemas['RestrictionLevel'],
    effective_restriction_level: ctx.permissions.effective_restriction_level,
    effective_privilege_level: ctx.permissions.effective_privilege_level,
    last_accessed_at: d.last_accessed_at?.toISOString() ?? null,
    // PostHog reads this from its web app's per-user view log, which nothing here writes.
    last_viewed_at: null,
    user_access_level: ctx.permissions.user_access_level,
    access_control_version: accessControlVersion(d.restriction_level),
    last_refresh: d.last_refresh?.toISOString() ?? null,
    team_id: d.project_id,
  };
}

export function serializeDashboard<I = Schemas['Insight']>(
  d: DashboardRow,
  ctx: DashboardContext<I>,
  tiles: TileView[],
): DashboardOf<I> {
  return {
    ...serializeDashboardBasic(d, ctx),
    use_template: d.use_template,
    use_dashboard: d.use_dashboard,
    delete_insights: false,
    filters: d.filters,
    variables: d.variables,
    breakdown_colors: d.breakdown_colors,
    data_color_theme_id: d.data_color_theme_id,
    // PostHog's persisted_* are the stored values, or null when empty.
    persisted_filters: Object.keys(d.filters).length ? d.filters : null,
    persisted_variables: Object.keys(d.variables).length ? d.variables : null,
    tiles: orderTiles(tiles)
      // An insight tile whose insight is not shown (deleted meanwhile) is left out, as PostHog's tile queryset does.
      .filter((t) => t.insight_id === null || ctx.insights?.has(t.insight_id))
      .map((t, order) => serializeTile(t, order, ctx.users, ctx.insights)),
  };
}

export type LayoutSize = 'sm' | 'xs';

/** A tile's [y, x] on one grid; a tile not placed there sorts after the placed ones (PostHog uses 100). */
export function gridPosition(layouts: Record<string, unknown>, size: LayoutSize): [number, number] {
  const grid = layouts[size] as { x?: unknown; y?: unknown } | undefined;
  const num = (v: unknown) => (typeof v === 'number' ? v : 100);
  return [num(grid?.y), num(grid?.x)];
}

/** Top to bottom, then left to right on the grid (`sm` unless asked), as PostHog orders tiles; unplaced tiles last. */
export function orderTiles<T extends Pick<TileView, 'id' | 'layouts'>>(tiles: T[], size: LayoutSize = 'sm'): T[] {
  return [...tiles].sort((a, b) => {
    const [ay, ax] = gridPosition(a.layouts, size);
    const [by, bx] = gridPosition(b.layouts, size);
    return ay - by || ax - bx || a.id - b.id;
  });
}

/** A tile row as a dashboard shows it (`TileView`, as the one-statement dashboard read gives it). */
export function tileView(t: TileRow): TileView {
  return {
    id: t.id,
    body: t.body,
    insight_id: t.insight_id,
    layouts: t.layouts,
    color: t.color,
    created_by_id: t.created_by_id,
    last_modified_by_id: t.last_modified_by_id,
    last_modified_at: t.last_modified_at.toISOString(),
    cache_key: t.cache_key,
  };
}

export function serializeTile<I>(
  t: TileView,
  order: number,
  users: Map<number, UserBasicRow>,
  insights?: Map<number, I>,
): TileOf<I> {
  const insight = t.insight_id === null ? undefined : insights?.get(t.insight_id);
  return {
    id: t.id,
    text: insight
      ? null
      : {
          body: t.body,
          created_by: userOrNull(users, t.created_by_id),
          last_modified_at: t.last_modified_at,
          last_modified_by: userOrNull(users, t.last_modified_by_id),
        },
    insight: insight ?? null,
    layouts: t.layouts,
    color: t.color,
    order,
  };
}

/**
 * The dashboard as JSON text, its insight tiles' insights given as JSON text (`insightText`) and spliced
 * in as they are.
 */
export function dashboardText(
  d: DashboardRow,
  ctx: DashboardContext<JsonText<Schemas['Insight']>>,
  tiles: TileView[],
): JsonText<Schemas['Dashboard']> {
  const { tiles: shown, ...dashboard } = serializeDashboard(d, ctx, tiles);
  const items = shown.map(
    ({ insight, ...tile }) => `${JSON.stringify(tile).slice(0, -1)},"insight":${insight ?? 'null'}}`,
  );
  return `${JSON.stringify(dashboard).slice(0, -1)},"tiles":[${items.join(',')}]}`;
}

export function serializeCollaborator({ collaborator, user }: Collaborator): Schemas['DashboardCollaborator'] {
  return {
    id: collaborator.id,
    dashboard_id: collaborator.dashboard_id,
    user: serializeUserBasic(user),
    level: collaborator.level as Schemas['PrivilegeLevel'],
    added_at: collaborator.added_at.toISOString(),
    updated_at: collaborator.updated_at.toISOString(),
    user_uuid: user.uuid,
  };
}
