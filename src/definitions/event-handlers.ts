import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { jsonPage, sendJsonText } from '../http/json-text.js';
import {
  deleteDefinition,
  eventVolume30Day,
  isOrganizationMember,
  typedEventNames,
  updateDefinition,
  type EventDefinitionChanges,
  type EventType,
  type Ordering,
} from './event-queries.js';
import { normalizeTags } from '../core/tags.js';
import { loadEventDefinition, presentEventDefinitionPage, presentEventDefinitions } from './event-definitions.js';
import { TYPESCRIPT_GENERATOR_VERSION, typescriptModule, typescriptSchemaHash } from './event-typescript.js';
import { jsonNameList, verificationChanges } from './common.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';

type Body = components['schemas']['PatchedEventDefinitionRequest'];

const find = (req: ProjectRequest, id: string) => loadEventDefinition(req.server.db, req.tenant.project_id, id);

async function update(req: ProjectRequest & FastifyRequest<{ Params: { id: string } }>) {
  const body = (req.body ?? {}) as Body;
  const current = await find(req, req.params.id);
  const changes: EventDefinitionChanges = verificationChanges(body, current, req.principal.user.id, 'An event');
  if (body.description !== undefined) changes.description = body.description;
  if (body.tags !== undefined) changes.tags = normalizeTags(body.tags);
  if (body.owner !== undefined) {
    if (body.owner !== null && !(await isOrganizationMember(req.server.db, req.tenant.organization_id, body.owner))) {
      throw ApiError.validation('owner', `Invalid pk "${body.owner}" - object does not exist.`, 'does_not_exist');
    }
    changes.owner_id = body.owner;
  }
  const row = await updateDefinition(req.server.db, req.tenant.project_id, current.id, changes);
  if (!row) throw ApiError.notFound();
  return (await presentEventDefinitions(req.server.db, [row]))[0]!;
}

export const eventDefinitionHandlers = {
  async event_definitions_list(req, reply) {
    const q = req.query;
    const page = pageOf(q);
    const excluded = jsonNameList(
      'excluded_properties',
      q.excluded_properties,
      'excluded_properties must be a JSON list of event names.',
    );
    const { count, results } = await presentEventDefinitionPage(
      req.server.db,
      req.tenant.project_id,
      {
        search: q.search,
        eventType: (q.event_type ?? 'event') as EventType,
        excludeHidden: q.exclude_hidden === true,
        excludedNames: excluded ?? [],
        ordering: (q.ordering ?? []) as Ordering[],
      },
      page,
    );
    return sendJsonText(reply, jsonPage(req, page, count, results));
  },

  async event_definitions_retrieve(req) {
    return (await presentEventDefinitions(req.server.db, [await find(req, req.params.id)]))[0]!;
  },

  event_definitions_partial_update: update,
  event_definitions_update: update,

  async event_definitions_destroy(req, reply) {
    const current = await find(req, req.params.id);
    await deleteDefinition(req.server.db, req.tenant.project_id, current.id);
    reply.code(204);
  },

  async event_definitions_metrics_retrieve(req) {
    const current = await find(req, req.params.id);
    return {
      query_usage_30_day: null,
      volume_30_day: await eventVolume30Day(req.server.db, req.tenant.project_id, current.name),
    };
  },

  async event_definitions_typescript_retrieve(req) {
    const names = await typedEventNames(req.server.db, req.tenant.project_id);
    return {
      content: typescriptModule(names, new Date()),
      event_count: names.length,
      schema_hash: typescriptSchemaHash(names),
      generator_version: TYPESCRIPT_GENERATOR_VERSION,
    };
  },
} satisfies SomeHandlers;
