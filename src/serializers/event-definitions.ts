import type { components } from '../../generated/api.js';
import type { EventDefinitionRow } from '../db/queries/event-definitions.js';
import type { UserRow } from '../db/queries/users.js';
import { serializeUserBasic } from './users.js';

type Schemas = components['schemas'];

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The user a definition names, as embedded; null when none is named or the user is gone. */
export function embeddedUser(users: Map<number, UserRow>, id: number | null) {
  const u = id === null ? undefined : users.get(id);
  return u ? serializeUserBasic(u) : null;
}

export function serializeEventDefinition(
  d: EventDefinitionRow,
  users: Map<number, UserRow>,
  volume30Day: number | null = null,
): Schemas['EventDefinition'] {
  const user = (id: number | null) => embeddedUser(users, id);
  const lastUpdated = d.last_seen_at && d.last_seen_at > d.updated_at ? d.last_seen_at : d.updated_at;
  return {
    id: d.id,
    name: d.name,
    owner: user(d.owner_id),
    description: d.description,
    tags: d.tags,
    created_at: iso(d.created_at),
    updated_at: d.updated_at.toISOString(),
    updated_by: user(d.updated_by_id),
    last_seen_at: iso(d.last_seen_at),
    last_updated_at: lastUpdated.toISOString(),
    verified: d.verified,
    verified_at: iso(d.verified_at),
    verified_by: user(d.verified_by_id),
    hidden: d.hidden,
    is_action: false,
    action_id: null,
    is_calculating: false,
    last_calculated_at: null,
    created_by: null,
    post_to_slack: false,
    default_columns: [],
    volume_30_day: volume30Day,
    query_usage_30_day: null,
  };
}

/** The users a definition names. */
export function userIdsOf(d: EventDefinitionRow): (number | null)[] {
  return [d.owner_id, d.updated_by_id, d.verified_by_id];
}
