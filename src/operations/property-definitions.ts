import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { paginated } from '../http/pagination.js';
import {
  deletePropertyDefinition,
  getPropertyDefinition,
  listPropertyDefinitions,
  seenTogether,
  updatePropertyDefinition,
  type PropertyDefinitionChanges,
  type PropertyDefinitionRow,
} from '../db/queries/property-definitions.js';
import { normalizeTags } from '../dashboards/tags.js';
import { serializePropertyDefinition, userIdsOf } from '../serializers/property-definitions.js';
import { PropertyKind } from '../capture/property-definitions.js';
import { findDefinition, jsonNameList, presentDefinitions, verificationChanges } from './definitions.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';

type Body = components['schemas']['PatchedPropertyDefinitionRequest'];

/** PostHog's numbers; group and session properties are never recorded here, so they list nothing. */
const TYPES: Record<string, number> = { event: PropertyKind.event, person: PropertyKind.person, group: 3, session: 4 };

const nameList = (attr: string, text: string | undefined) =>
  jsonNameList(attr, text, `${attr} must be a JSON list of names.`);

const present = (req: FastifyRequest, rows: PropertyDefinitionRow[]) =>
  presentDefinitions(req, rows, userIdsOf, serializePropertyDefinition);

const find = (req: ProjectRequest, id: string) =>
  findDefinition(req, id, (projectId, defId) => getPropertyDefinition(req.server.db, projectId, defId));

async function update(req: ProjectRequest & FastifyRequest<{ Params: { id: string } }>) {
  const body = (req.body ?? {}) as Body;
  const current = await find(req, req.params.id);
  const changes: PropertyDefinitionChanges = verificationChanges(body, current, req.principal.user.id, 'A property');
  if (body.description !== undefined) changes.description = body.description;
  if (body.tags !== undefined) changes.tags = normalizeTags(body.tags);
  if (body.property_type !== undefined) {
    changes.property_type = body.property_type;
    changes.is_numerical = body.property_type === 'Numeric';
  }
  const row = await updatePropertyDefinition(req.server.db, req.tenant.project_id, current.id, changes);
  if (!row) throw ApiError.notFound();
  return (await present(req, [row]))[0]!;
}

export const propertyDefinitionHandlers = {
  async property_definitions_list(req) {
    const q = req.query;
    const page = pageOf(q);
    const { count, rows } = await listPropertyDefinitions(
      req.server.db,
      req.tenant.project_id,
      {
        type: TYPES[q.type ?? 'event']!,
        search: q.search,
        eventNames: nameList('event_names', q.event_names),
        filterByEventNames: q.filter_by_event_names,
        excludeCore: q.exclude_core_properties === true,
        excludeHidden: q.exclude_hidden === true,
        isNumerical: q.is_numerical,
        isFeatureFlag: q.is_feature_flag,
        excludedNames: nameList('excluded_properties', q.excluded_properties) ?? [],
        names:
          q.properties === undefined
            ? undefined
            : q.properties
                .split(',')
                .map((n) => n.trim())
                .filter(Boolean),
      },
      page,
    );
    return paginated(req, page, count, await present(req, rows));
  },

  async property_definitions_retrieve(req) {
    return (await present(req, [await find(req, req.params.id)]))[0]!;
  },

  property_definitions_partial_update: update,
  property_definitions_update: update,

  async property_definitions_destroy(req, reply) {
    const current = await find(req, req.params.id);
    await deletePropertyDefinition(req.server.db, req.tenant.project_id, current);
    reply.code(204);
  },

  async property_definitions_seen_together_retrieve(req) {
    const names = req.query.event_names;
    const seen = await seenTogether(req.server.db, req.tenant.project_id, names, req.query.property_name);
    return Object.fromEntries(names.map((n) => [n, seen.has(n)]));
  },
} satisfies SomeHandlers;
