import { ApiError } from './errors.js';
import type { OrganizationTenant } from './tenant.js';

/** Organization membership levels, PostHog's numbers. */
export const Level = { MEMBER: 1, ADMIN: 8, OWNER: 15 } as const;

export function requireLevel(tenant: OrganizationTenant, level: number): void {
  if (tenant.level < level) throw ApiError.permissionDenied('Your organization access level is insufficient.');
}
