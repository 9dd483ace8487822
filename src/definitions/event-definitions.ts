import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import type { Page } from '../core/paging.js';
import { getDefinition, listDefinitions, type DefinitionFilter, type EventDefinitionRow } from './event-queries.js';
import { definitionView, serializeEventDefinition, UNTRACKED, userIdsOf } from './event-serialize.js';
import { withConstantFields, type JsonText } from '../core/json-text.js';
import { loadDefinition, presentDefinitions } from './common.js';

type Schemas = components['schemas'];

/** The event definition `id` names in the project; a malformed or foreign id is a 404. */
export function loadEventDefinition(db: Db, projectId: number, id: string): Promise<EventDefinitionRow> {
  return loadDefinition(id, (defId) => getDefinition(db, projectId, defId));
}

const withUntracked = withConstantFields<Schemas['EventDefinition']>({ ...UNTRACKED, volume_30_day: null });

/**
 * A page of the project's event definitions, read in one statement with the users they name, each as
 * the JSON PostgreSQL wrote, with the untracked fields added (the list shows no 30-day volume).
 */
export async function presentEventDefinitionPage(
  db: Db,
  projectId: number,
  filter: DefinitionFilter,
  page: Page,
): Promise<{ count: number; results: JsonText<Schemas['EventDefinition']>[] }> {
  const { count, rows } = await listDefinitions(db, projectId, filter, page);
  const results = rows.map(({ json }) => withUntracked(json));
  return { count, results };
}

/** Definition rows (a retrieve, an update) with one look-up of the users they name. */
export function presentEventDefinitions(db: Db, rows: EventDefinitionRow[]): Promise<Schemas['EventDefinition'][]> {
  return presentDefinitions(db, rows, userIdsOf, (d, users) => serializeEventDefinition(definitionView(d), users));
}
