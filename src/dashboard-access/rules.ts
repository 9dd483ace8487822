import type { DashboardRow } from '../dashboards/queries.js';
import { Level } from '../core/levels.js';
import { ApiError } from '../core/errors.js';

/** Dashboard.RestrictionLevel and Dashboard.PrivilegeLevel. */
export const Restriction = { EVERYONE_IN_PROJECT_CAN_EDIT: 21, ONLY_COLLABORATORS_CAN_EDIT: 37 } as const;
export const Privilege = { CAN_VIEW: 21, CAN_EDIT: 37 } as const;
type Level21or37 = 21 | 37;

/** Who is looking: a user with their level in the project's organization. */
export interface Viewer {
  id: number;
  level: number;
}

export interface DashboardPermissions {
  effective_restriction_level: Level21or37;
  effective_privilege_level: Level21or37;
  can_edit: boolean;
  can_restrict: boolean;
  /** PostHog's access-control level (`user_access_level`); null for an anonymous reader. */
  user_access_level: 'viewer' | 'editor' | 'manager' | null;
}

/**
 * PostHog's UserDashboardPermissions with every licence on: the effective restriction
 * is the stored one; the creator and project administrators can restrict and always edit; on a
 * restricted dashboard everyone else edits only as a collaborator.
 */
export function dashboardPermissions(
  dashboard: Pick<DashboardRow, 'restriction_level' | 'created_by_id'>,
  viewer: Viewer,
  explicitPrivilege: number | null,
): DashboardPermissions {
  const restriction = dashboard.restriction_level as Level21or37;
  const canRestrict = dashboard.created_by_id === viewer.id || viewer.level >= Level.ADMIN;
  const privilege: Level21or37 =
    restriction === Restriction.EVERYONE_IN_PROJECT_CAN_EDIT || canRestrict
      ? Privilege.CAN_EDIT
      : ((explicitPrivilege ?? Privilege.CAN_VIEW) as Level21or37);
  const canEdit = restriction < Restriction.ONLY_COLLABORATORS_CAN_EDIT || privilege >= Privilege.CAN_EDIT;
  return {
    effective_restriction_level: restriction,
    effective_privilege_level: privilege,
    can_edit: canEdit,
    can_restrict: canRestrict,
    // PostHog's access control gives creators and organization admins its highest level, `manager`,
    // and everyone else the dashboard default, `editor`; a v1-restricted dashboard the caller cannot
    // edit is reported as `viewer` so the two fields never contradict each other.
    user_access_level: canRestrict ? 'manager' : canEdit ? 'editor' : 'viewer',
  };
}

/** What an anonymous reader of a shared link gets: read-only (PostHog forces these on shared views). */
export const SHARED_VIEW: DashboardPermissions = {
  effective_restriction_level: Restriction.ONLY_COLLABORATORS_CAN_EDIT,
  effective_privilege_level: Privilege.CAN_VIEW,
  can_edit: false,
  can_restrict: false,
  user_access_level: null,
};

export function requireEdit(
  permissions: DashboardPermissions,
  detail = "You don't have edit permissions for this dashboard.",
): void {
  if (!permissions.can_edit) throw ApiError.permissionDenied(detail);
}

export function requireRestrict(permissions: DashboardPermissions): void {
  if (!permissions.can_restrict) {
    throw ApiError.permissionDenied(
      "Only the dashboard owner and project admins have the restriction rights required to change the dashboard's " +
        'restriction level.',
    );
  }
}
