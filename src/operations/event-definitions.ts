import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { rejectNulInJson } from '../http/input-guard.js';
import { pageOf, paginated } from '../http/pagination.js';
import {
  deleteDefinition,
  getDefinition,
  isOrganizationMember,
  listDefinitions,
  updateDefinition,
  type EventDefinitionChanges,
  type EventDefinitionRow,
  type EventType,
  type Ordering,
} from '../db/queries/event-definitions.js';
import { getUsers } from '../db/queries/users.js';
import { normalizeTags } from '../dashboards/tags.js';
import { serializeEventDefinition, userIdsOf } from '../serializers/event-definitions.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function nameList(text: string | undefined): string[] {
  if (text === undefined || text === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw ApiError.validation('excluded_properties', 'excluded_properties must be a JSON list of event names.');
  }
  if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string')) {
    throw ApiError.validation('excluded_properties', 'excluded_properties must be a JSON list of event names.');
  }
  rejectNulInJson('excluded_properties', parsed);
  return parsed;
}

async function present(req: FastifyRequest, rows: EventDefinitionRow[]) {
  const users = await getUsers(req.server.db, userIdsOf(rows));
  return rows.map((d) => serializeEventDefinition(d, users));
}

async function find(req: FastifyRequest, id: string): Promise<EventDefinitionRow> {
  const row = UUID.test(id) ? await getDefinition(req.server.db, req.tenant.project_id!, id.toLowerCase()) : undefined;
  if (!row) throw ApiError.notFound();
  return row;
}

export const eventDefinitionHandlers = {
  async event_definitions_list(req) {
    const q = req.query;
    const page = pageOf(q);
    const { count, rows } = await listDefinitions(
      req.server.db,
      req.tenant.project_id!,
      {
        search: q.search,
        eventType: (q.event_type ?? 'event') as EventType,
        excludeHidden: q.exclude_hidden === true,
        excludedNames: nameList(q.excluded_properties),
        ordering: (q.ordering ?? []) as Ordering[],
      },
      page,
    );
    return paginated(req, page, count, await present(req, rows));
  },

  async event_definitions_retrieve(req) {
    return (await present(req, [await find(req, req.params.id)]))[0]!;
  },

  async event_definitions_partial_update(req) {
    const body = req.body ?? {};
    if (body.hidden === true && body.verified === true) {
      throw ApiError.validation(null, 'An event cannot be both hidden and verified');
    }
    const current = await find(req, req.params.id);
    const userId = req.principal.user.id;
    const changes: EventDefinitionChanges = { updated_by_id: userId };
    if (body.description !== undefined) changes.description = body.description;
    if (body.tags !== undefined) changes.tags = normalizeTags(body.tags);
    if (body.owner !== undefined) {
      if (body.owner !== null && !(await isOrganizationMember(req.server.db, req.tenant.organization_id, body.owner))) {
        throw ApiError.validation('owner', `Invalid pk "${body.owner}" - object does not exist.`, 'does_not_exist');
      }
      changes.owner_id = body.owner;
    }
    if (body.verified === true && !current.verified) {
      Object.assign(changes, { verified: true, verified_at: new Date(), verified_by_id: userId, hidden: false });
    } else if (body.verified === false) {
      Object.assign(changes, { verified: false, verified_at: null, verified_by_id: null });
    }
    if (body.hidden !== undefined) changes.hidden = body.hidden;
    if (body.hidden === true) Object.assign(changes, { verified: false, verified_at: null, verified_by_id: null });
    const row = await updateDefinition(req.server.db, req.tenant.project_id!, current.id, changes);
    if (!row) throw ApiError.notFound();
    return (await present(req, [row]))[0]!;
  },

  async event_definitions_destroy(req, reply) {
    const current = await find(req, req.params.id);
    await deleteDefinition(req.server.db, req.tenant.project_id!, current.id);
    reply.code(204);
  },
} satisfies SomeHandlers;
