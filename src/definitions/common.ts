import { ApiError } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { rejectNulInJson } from '../core/null-characters.js';
import type { Db } from '../db/client.js';
import { getUsers, type UserRow } from '../users/queries.js';

/**
 * What event and property definitions share: their ids, the JSON name lists their list filters take,
 * the verified/hidden rules of an update, and presenting rows with the users they name.
 */

/** A JSON array of names in a query parameter, as PostHog's frontend sends them; `message` words a bad one. */
export function jsonNameList(attr: string, text: string | undefined, message: string): string[] | undefined {
  if (text === undefined || text === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string')) throw ApiError.validation(attr, message);
  rejectNulInJson(attr, parsed);
  return parsed;
}

/** The definition `id` names through `get` (in the caller's project); a malformed or foreign id is a 404. */
export async function loadDefinition<Row>(id: string, get: (id: string) => Promise<Row | undefined>): Promise<Row> {
  const row = isUuid(id) ? await get(id.toLowerCase()) : undefined;
  if (!row) throw ApiError.notFound();
  return row;
}

interface Verification {
  verified?: boolean;
  /** PostHog's event definition field is nullable; null reads as not hidden. */
  hidden?: boolean | null;
}

export interface VerificationChanges {
  updated_by_id: number;
  verified?: boolean;
  verified_at?: Date | null;
  verified_by_id?: number | null;
  hidden?: boolean;
}

/**
 * PostHog's rules for `verified` and `hidden`: never both (a 400 naming `noun`), hiding drops the
 * verification, verifying shows the definition again and records who and when; every update records
 * who made it.
 */
export function verificationChanges(
  body: Verification,
  current: { verified: boolean },
  userId: number,
  noun: 'An event' | 'A property',
): VerificationChanges {
  if (body.hidden === true && body.verified === true) {
    throw ApiError.validation(null, `${noun} cannot be both hidden and verified`);
  }
  const changes: VerificationChanges = { updated_by_id: userId };
  if (body.verified === true && !current.verified) {
    Object.assign(changes, { verified: true, verified_at: new Date(), verified_by_id: userId, hidden: false });
  } else if (body.verified === false) {
    Object.assign(changes, { verified: false, verified_at: null, verified_by_id: null });
  }
  if (body.hidden !== undefined) changes.hidden = body.hidden === true;
  if (body.hidden === true) Object.assign(changes, { verified: false, verified_at: null, verified_by_id: null });
  return changes;
}

/** Serialises rows with one look-up of the users they name. */
export async function presentDefinitions<Row, Out>(
  db: Db,
  rows: Row[],
  userIds: (row: Row) => (number | null)[],
  serialize: (row: Row, users: Map<number, UserRow>) => Out,
): Promise<Out[]> {
  const ids = rows.flatMap(userIds).filter((id): id is number => id !== null);
  const users = await getUsers(db, ids);
  return rows.map((r) => serialize(r, users));
}
