import { randomUUID } from 'node:crypto';
import type { Db } from '../db/client.js';
import { ApiError } from '../core/errors.js';
import { isUuid, rowIdOf } from '../core/ids.js';
import { ingest } from '../capture/ingest.js';
import type { CapturedEvent } from '../capture/normalize.js';
import { sanitize } from '../capture/normalize.js';
import { sqlState } from '../core/sql-state.js';
import { getPerson, ingestProject, listPersons, type PersonRow } from './queries.js';
import { orderDistinctIds } from './serialize.js';

/** A page of the project's persons; a property filter's regular expression PostgreSQL refuses is PostHog's 400. */
export async function findPersons(...args: Parameters<typeof listPersons>): ReturnType<typeof listPersons> {
  try {
    return await listPersons(...args);
  } catch (err) {
    if (sqlState(err) === '2201B') {
      throw ApiError.validation('properties', 'Invalid regular expression in a property filter.');
    }
    throw err;
  }
}

/**
 * The person a path names: a uuid, else a numeric id (PostHog's `get_pk_or_uuid`). Text that is
 * neither is PostHog's 400; a person of another project is a 404.
 */
export async function loadPerson(db: Db, projectId: number, key: string): Promise<PersonRow> {
  let row: PersonRow | undefined;
  if (isUuid(key)) row = await getPerson(db, projectId, { uuid: key.toLowerCase() });
  else if (/^\d+$/.test(key)) {
    const id = rowIdOf(key);
    row = id === undefined ? undefined : await getPerson(db, projectId, { id });
  } else {
    throw ApiError.validation(
      null,
      'The ID provided does not look like a personID. ' +
        `If you are using a distinctId, please use /persons?distinct_id=${key} instead.`,
    );
  }
  if (!row) throw ApiError.notFound();
  return row;
}

/**
 * Changes a person's properties as PostHog does: an event on its first distinct id, stored by
 * ingestion (so it takes ingestion's locks and shows in the events), before this returns.
 */
async function personEvent(
  db: Db,
  projectId: number,
  person: PersonRow,
  event: string,
  properties: Record<string, unknown>,
): Promise<void> {
  const distinctId = orderDistinctIds(person.distinct_ids)[0];
  if (distinctId === undefined)
    throw ApiError.validation(null, 'This person has no distinct id to send the change to.');
  const project = await ingestProject(db, projectId);
  if (!project) throw ApiError.notFound();
  const now = new Date();
  const e: CapturedEvent = {
    uuid: randomUUID(),
    event,
    distinct_id: distinctId,
    properties: sanitize({ ...properties, $process_person_profile: true, $lib: 'posthog-api' }),
    timestamp: now,
    elements_chain: '',
  };
  await ingest(db, project, [e], now);
}

export function setPersonProperties(
  db: Db,
  projectId: number,
  person: PersonRow,
  properties: Record<string, unknown>,
): Promise<void> {
  return personEvent(db, projectId, person, '$set', { $set: properties });
}

export function unsetPersonProperty(db: Db, projectId: number, person: PersonRow, key: string): Promise<void> {
  return personEvent(db, projectId, person, '$delete_person_property', { $unset: [key] });
}
