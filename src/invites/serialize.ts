import type { components } from '../../generated/api.js';
import { isExpired, type InviteRow } from './queries.js';
import type { UserRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';

type OrganizationInvite = components['schemas']['OrganizationInvite'];

export function serializeInvite(i: InviteRow, createdBy: UserRow | undefined): OrganizationInvite {
  return {
    id: i.id,
    target_email: i.target_email,
    first_name: i.first_name,
    emailing_attempt_made: i.emailing_attempt_made,
    level: i.level as OrganizationInvite['level'],
    is_expired: isExpired(i),
    created_by: createdBy ? serializeUserBasic(createdBy) : null,
    created_at: i.created_at.toISOString(),
    updated_at: i.updated_at.toISOString(),
    message: i.message,
    private_project_access: i.private_project_access as OrganizationInvite['private_project_access'],
  };
}
