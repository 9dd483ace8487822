import type { components } from '../../generated/api.js';
import type { UserRow } from '../db/queries/users.js';

export function serializeUserBasic(u: UserRow): components['schemas']['UserBasic'] {
  return {
    id: u.id,
    uuid: u.uuid,
    distinct_id: u.distinct_id,
    first_name: u.first_name,
    last_name: u.last_name,
    email: u.email,
    is_email_verified: u.is_email_verified,
    hedgehog_config: u.hedgehog_config,
  };
}
