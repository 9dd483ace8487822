// Property definitions: loading one by its path id, presenting them with the users they name, and
// PostHog's rules for changing one.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { normalizeTags } from '../core/tags.js';
import type { Db } from '../db/client.js';
import {
  getPropertyDefinition,
  updatePropertyDefinition,
  type PropertyDefinitionChanges,
  type PropertyDefinitionRow,
} from './property-queries.js';
import { serializePropertyDefinition, userIdsOf } from './property-serialize.js';
import { loadDefinition, presentDefinitions, verificationChanges } from './common.js';

type Body = components['schemas']['PatchedPropertyDefinitionRequest'];

export const presentPropertyDefinitions = (db: Db, rows: PropertyDefinitionRow[]) =>
  presentDefinitions(db, rows, userIdsOf, serializePropertyDefinition);

/** The project's property definition `id`; a malformed or foreign id is a 404. */
export const loadPropertyDefinition = (db: Db, projectId: number, id: string) =>
  loadDefinition(id, (defId) => getPropertyDefinition(db, projectId, defId));

/** PATCH and PUT by user `userId`: the verification rules, then the given fields. */
export async function changePropertyDefinition(
  db: Db,
  projectId: number,
  userId: number,
  current: PropertyDefinitionRow,
  body: Body,
): Promise<PropertyDefinitionRow> {
  const changes: PropertyDefinitionChanges = verificationChanges(body, current, userId, 'A property');
  if (body.description !== undefined) changes.description = body.description;
  if (body.tags !== undefined) changes.tags = normalizeTags(body.tags);
  if (body.property_type !== undefined) {
    changes.property_type = body.property_type;
    changes.is_numerical = body.property_type === 'Numeric';
  }
  const row = await updatePropertyDefinition(db, projectId, current.id, changes);
  if (!row) throw ApiError.notFound();
  return row;
}
