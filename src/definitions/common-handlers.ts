import type { FastifyRequest } from 'fastify';
import { loadDefinition, presentDefinitions as present } from './common.js';
import type { ProjectRequest } from '../http/types.js';
import type { UserRow } from '../users/queries.js';

// What event and property definitions share lives in src/definitions/common.ts; these take the request.
export { jsonNameList, verificationChanges, type VerificationChanges } from './common.js';

/** The definition the path names in the caller's project; a malformed or foreign id is a 404. */
export function findDefinition<Row>(
  req: ProjectRequest,
  id: string,
  get: (projectId: number, id: string) => Promise<Row | undefined>,
): Promise<Row> {
  return loadDefinition(id, (defId) => get(req.tenant.project_id, defId));
}

/** Serialises rows with one look-up of the users they name. */
export function presentDefinitions<Row, Out>(
  req: FastifyRequest,
  rows: Row[],
  userIds: (row: Row) => (number | null)[],
  serialize: (row: Row, users: Map<number, UserRow>) => Out,
): Promise<Out[]> {
  return present(req.server.db, rows, userIds, serialize);
}
