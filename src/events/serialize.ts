import type { components } from '../../generated/api.js';
import { chainToElements } from '../capture/elements.js';
import type { EventRow, PersonRow } from './queries.js';
import { toCsv } from './csv.js';

type Schemas = components['schemas'];

export function serializePerson(p: PersonRow): Schemas['EventPerson'] {
  return {
    id: p.id,
    uuid: p.uuid,
    is_identified: p.is_identified,
    distinct_ids: p.distinct_ids,
    properties: p.properties,
  };
}

export function serializeEvent(e: EventRow, person: Schemas['EventPerson'] | null): Schemas['Event'] {
  return {
    id: e.uuid,
    distinct_id: e.distinct_id,
    properties: e.properties,
    event: e.event,
    timestamp: e.timestamp.toISOString(),
    person,
    elements: chainToElements(e.elements_chain),
    elements_chain: e.elements_chain,
  };
}

/** The CSV form of events: the elements are already in `elements_chain`, so their parsed list is left out. */
export function eventsCsv(events: Schemas['Event'][]): Promise<string> {
  return toCsv(
    events.map(({ elements: _elements, ...rest }) => rest),
    ['id', 'event', 'distinct_id', 'timestamp', 'elements_chain'],
  );
}
