import type { components } from '../../generated/api.js';
import type { MembershipRow } from './queries.js';
import type { UserBasicRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';

type OrganizationMember = components['schemas']['OrganizationMember'];

export function serializeMember(
  { membership: m, user }: { membership: MembershipRow; user: UserBasicRow },
  lastLogin: Date | undefined,
): OrganizationMember {
  return {
    id: m.id,
    user: serializeUserBasic(user),
    level: m.level as OrganizationMember['level'],
    joined_at: m.joined_at.toISOString(),
    updated_at: m.updated_at.toISOString(),
    // There is no password, second-factor or social login here.
    is_2fa_enabled: false,
    has_social_auth: false,
    last_login: lastLogin?.toISOString() ?? null,
  };
}
