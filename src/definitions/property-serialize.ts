import type { components } from '../../generated/api.js';
import type { PropertyDefinitionRow } from './property-queries.js';
import type { UserRow } from '../users/queries.js';
import { embeddedUser } from './event-serialize.js';

type PropertyDefinition = components['schemas']['PropertyDefinition'];

export function serializePropertyDefinition(d: PropertyDefinitionRow, users: Map<number, UserRow>): PropertyDefinition {
  const user = (id: number | null) => embeddedUser(users, id);
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    tags: d.tags,
    is_numerical: d.is_numerical,
    property_type: d.property_type as PropertyDefinition['property_type'],
    is_seen_on_filtered_events: d.is_seen_on_filtered_events,
    updated_at: d.updated_at.toISOString(),
    updated_by: user(d.updated_by_id),
    verified: d.verified,
    verified_at: d.verified_at?.toISOString() ?? null,
    verified_by: user(d.verified_by_id),
    hidden: d.hidden,
  };
}

/** The users a definition names. */
export function userIdsOf(d: PropertyDefinitionRow): (number | null)[] {
  return [d.updated_by_id, d.verified_by_id];
}
