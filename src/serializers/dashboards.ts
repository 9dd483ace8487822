import type { components } from '../../generated/api.js';
import type { DashboardPermissions } from '../dashboards/access.js';
import type { Collaborator } from '../db/queries/dashboard-collaborators.js';
import type { DashboardRow } from '../db/queries/dashboards.js';
import type { TileRow } from '../db/queries/dashboard-tiles.js';
import type { SharingRow } from '../db/queries/sharing.js';
import type { UserRow } from '../db/queries/users.js';
import { serializeUserBasic } from './users.js';

type Schemas = components['schemas'];

export interface DashboardContext {
  is_shared: boolean;
  permissions: DashboardPermissions;
  users: Map<number, UserRow>;
}

function userOrNull(users: Map<number, UserRow>, id: number | null): Schemas['UserBasic'] | null {
  const user = id === null ? undefined : users.get(id);
  return user ? serializeUserBasic(user) : null;
}

/** A list item: exactly the fields the document lists for dashboards in a list. */
export function serializeDashboardBasic(d: DashboardRow, ctx: DashboardContext): Schemas['DashboardBasic'] {
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    pinned: d.pinned,
    created_at: d.created_at.toISOString(),
    created_by: userOrNull(ctx.users, d.created_by_id),
    is_shared: ctx.is_shared,
    deleted: d.deleted,
    creation_mode: d.creation_mode as Schemas['DashboardBasic']['creation_mode'],
    tags: d.tags,
    restriction_level: d.restriction_level as Schemas['RestrictionLevel'],
    effective_restriction_level: ctx.permissions.effective_restriction_level,
    effective_privilege_level: ctx.permissions.effective_privilege_level,
  };
}

export function serializeDashboard(d: DashboardRow, ctx: DashboardContext, tiles: TileRow[]): Schemas['Dashboard'] {
  return {
    ...serializeDashboardBasic(d, ctx),
    use_template: d.use_template,
    use_dashboard: d.use_dashboard,
    delete_insights: false,
    filters: d.filters,
    tiles: orderTiles(tiles).map((t, order) => serializeTile(t, order, ctx.users)),
  };
}

function position(t: TileRow): [number, number] {
  const sm = (t.layouts as { sm?: { x?: unknown; y?: unknown } }).sm;
  const num = (v: unknown) => (typeof v === 'number' ? v : 100);
  return [num(sm?.y), num(sm?.x)];
}

/** Top to bottom, then left to right on the `sm` grid, as PostHog orders tiles; unplaced tiles last. */
export function orderTiles(tiles: TileRow[]): TileRow[] {
  return [...tiles].sort((a, b) => {
    const [ay, ax] = position(a);
    const [by, bx] = position(b);
    return ay - by || ax - bx || a.id - b.id;
  });
}

export function serializeTile(t: TileRow, order: number, users: Map<number, UserRow>): Schemas['DashboardTile'] {
  return {
    id: t.id,
    text: {
      body: t.body,
      created_by: userOrNull(users, t.created_by_id),
      last_modified_at: t.last_modified_at.toISOString(),
      last_modified_by: userOrNull(users, t.last_modified_by_id),
    },
    insight: null,
    layouts: t.layouts,
    color: t.color,
    order,
  };
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

export function serializeSharing(s: SharingRow): Schemas['SharingConfiguration'] {
  return { created_at: s.created_at.toISOString(), enabled: s.enabled, access_token: s.access_token };
}
