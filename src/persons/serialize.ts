import type { components } from '../../generated/api.js';
import type { PersonRow } from './queries.js';
import type { PersonActivity, PersonActivityRow } from './activity.js';
import type { UserRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';

type Person = components['schemas']['Person'];

/** PostHog's PERSON_DEFAULT_DISPLAY_NAME_PROPERTIES, in its order. */
const DISPLAY_NAME_PROPERTIES = ['email', 'Email', '$email', 'name', 'Name', 'username', 'Username', 'UserName'];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** posthog-js's anonymous ids before they became UUIDs. */
const LEGACY_ANONYMOUS = /^[0-9a-f]{13,14}-[0-9a-f]{13,15}-[0-9a-f]{7,8}-[0-9a-f]{6}-[0-9a-f]{13,14}$/i;

export const isAnonymousId = (id: string) => UUID.test(id) || LEGACY_ANONYMOUS.test(id);

/** Identified-looking ids first (a stable sort, as PostHog's `sorted(key=is_anonymous_id)`). */
export const orderDistinctIds = (ids: string[]) =>
  [...ids].sort((a, b) => Number(isAnonymousId(a)) - Number(isAnonymousId(b)));

/** PostHog's display name: the first display property set, else the first distinct id, else the id. */
export function personName(id: number, properties: Record<string, unknown>, distinctIds: string[]): string {
  for (const key of DISPLAY_NAME_PROPERTIES) {
    const v = properties[key];
    if (v !== undefined && v !== null && v !== '' && v !== false && v !== 0)
      return typeof v === 'string' ? v : JSON.stringify(v);
  }
  return distinctIds[0] ?? String(id);
}

export function serializePerson(row: PersonRow): Person {
  const distinct_ids = orderDistinctIds(row.distinct_ids);
  return {
    id: row.id,
    name: personName(row.id, row.properties, distinct_ids),
    distinct_ids,
    properties: row.properties,
    created_at: row.created_at,
    uuid: row.uuid,
  };
}

export function serializePersonActivity(
  a: PersonActivityRow,
  user: UserRow | undefined,
): components['schemas']['PersonActivityEntry'] {
  return {
    id: a.id,
    user: user ? serializeUserBasic(user) : null,
    activity: a.activity as PersonActivity,
    scope: 'Person',
    item_id: String(a.person_id),
    detail: a.detail as components['schemas']['PersonActivityEntry']['detail'],
    created_at: a.created_at.toISOString(),
  };
}
