import type { components } from '../../generated/api.js';
import type { EventDefinitionRow, EventDefinitionView } from './event-queries.js';
import type { UserRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';

type Schemas = components['schemas'];

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The user a definition names, as embedded; null when none is named or the user is gone. */
export function embeddedUser(users: Map<number, UserRow>, id: number | null) {
  const u = id === null ? undefined : users.get(id);
  return u ? serializeUserBasic(u) : null;
}

/** A definition row as the list reads it (`EventDefinitionView`): its timestamps as the contract's strings. */
export function definitionView(d: EventDefinitionRow): EventDefinitionView {
  return {
    ...d,
    created_at: iso(d.created_at),
    updated_at: d.updated_at.toISOString(),
    last_seen_at: iso(d.last_seen_at),
    verified_at: iso(d.verified_at),
  };
}

/** PostHog's fields for actions, Slack and usage, which nothing here records. */
export const UNTRACKED: Pick<
  Schemas['EventDefinition'],
  | 'is_action'
  | 'action_id'
  | 'is_calculating'
  | 'last_calculated_at'
  | 'created_by'
  | 'post_to_slack'
  | 'default_columns'
  | 'query_usage_30_day'
> = {
  is_action: false,
  action_id: null,
  is_calculating: false,
  last_calculated_at: null,
  created_by: null,
  post_to_slack: false,
  default_columns: [],
  query_usage_30_day: null,
};

export function serializeEventDefinition(
  d: EventDefinitionView,
  users: Map<number, UserRow>,
  volume30Day: number | null = null,
): Schemas['EventDefinition'] {
  const user = (id: number | null) => embeddedUser(users, id);
  // toISOString's strings order as the times they write.
  const lastUpdated = d.last_seen_at !== null && d.last_seen_at > d.updated_at ? d.last_seen_at : d.updated_at;
  return {
    id: d.id,
    name: d.name,
    owner: user(d.owner_id),
    description: d.description,
    tags: d.tags,
    created_at: d.created_at,
    updated_at: d.updated_at,
    updated_by: user(d.updated_by_id),
    last_seen_at: d.last_seen_at,
    last_updated_at: lastUpdated,
    verified: d.verified,
    verified_at: d.verified_at,
    verified_by: user(d.verified_by_id),
    hidden: d.hidden,
    ...UNTRACKED,
    volume_30_day: volume30Day,
  };
}

/** The users a definition names. */
export function userIdsOf(d: EventDefinitionRow | EventDefinitionView): (number | null)[] {
  return [d.owner_id, d.updated_by_id, d.verified_by_id];
}
