import type { components } from '../../generated/api.js';
import type { PersonalApiKeyRow } from './queries.js';

type PersonalAPIKey = components['schemas']['PersonalAPIKey'];

/** `value` is only ever set in the create and roll answers. */
export function serializeKey(k: PersonalApiKeyRow, value: string | null = null): PersonalAPIKey {
  return {
    id: k.id,
    label: k.label,
    value,
    mask_value: k.mask_value,
    created_at: k.created_at.toISOString(),
    last_used_at: k.last_used_at?.toISOString() ?? null,
    last_rolled_at: k.last_rolled_at?.toISOString() ?? null,
    user_id: k.user_id,
    scopes: k.scopes as PersonalAPIKey['scopes'],
    scoped_teams: k.scoped_teams,
    scoped_organizations: k.scoped_organizations,
  };
}
