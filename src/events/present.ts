import type { components } from '../../generated/api.js';
import { chainToElements } from '../capture/elements.js';
import { withFields, type JsonText } from '../core/json-text.js';
import type { Db } from '../db/client.js';
import { personsByIds, type EventJsonRow, type EventRow } from './queries.js';
import { serializeEvent, serializePerson } from './serialize.js';

type Schemas = components['schemas'];

/** The persons of a page's events, serialized, when the listing includes them. */
async function personsOf(
  db: Db,
  projectId: number,
  rows: { person_id: number | null }[],
  includePerson: boolean,
): Promise<Map<number, Schemas['EventPerson']>> {
  const ids = includePerson ? [...new Set(rows.map((r) => r.person_id).filter((id): id is number => id !== null))] : [];
  const people = await personsByIds(db, projectId, ids);
  return new Map([...people].map(([id, p]) => [id, serializePerson(p)]));
}

/** Events read as rows (a retrieve, the CSV listing), with their persons when asked. */
export async function presentEvents(
  db: Db,
  projectId: number,
  rows: EventRow[],
  includePerson: boolean,
): Promise<Schemas['Event'][]> {
  const people = await personsOf(db, projectId, rows, includePerson);
  return rows.map((r) => serializeEvent(r, (r.person_id !== null && people.get(r.person_id)) || null));
}

/**
 * The JSON listing's events: each as PostgreSQL wrote it, with its person (when asked) and its parsed
 * elements added by the functions a retrieve uses.
 */
export async function presentEventsJson(
  db: Db,
  projectId: number,
  rows: EventJsonRow[],
  includePerson: boolean,
): Promise<JsonText<Schemas['Event']>[]> {
  const people = await personsOf(db, projectId, rows, includePerson);
  return rows.map((r) =>
    withFields<Schemas['Event']>(r.json, {
      person: r.person_id === null ? null : (people.get(r.person_id) ?? null),
      elements: chainToElements(r.elements_chain),
    }),
  );
}
