import type { FastifyRequest } from 'fastify';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { paginated } from '../http/pagination.js';
import { deletePropertyDefinition, listPropertyDefinitions, seenTogether } from './property-queries.js';
import { PropertyKind } from '../capture/property-definitions.js';
import { jsonNameList } from './common.js';
import {
  changePropertyDefinition,
  loadPropertyDefinition,
  presentPropertyDefinitions,
} from './property-definitions.js';
import { pageOf } from '../core/paging.js';
import type { components } from '../../generated/api.js';

/** PostHog's numbers; group and session properties are never recorded here, so they list nothing. */
const TYPES: Record<string, number> = { event: PropertyKind.event, person: PropertyKind.person, group: 3, session: 4 };

const nameList = (attr: string, text: string | undefined) =>
  jsonNameList(attr, text, `${attr} must be a JSON list of names.`);

const find = (req: ProjectRequest & FastifyRequest<{ Params: { id: string } }>) =>
  loadPropertyDefinition(req.server.db, req.tenant.project_id, req.params.id);

type Body = components['schemas']['PatchedPropertyDefinitionRequest'];

async function update(req: ProjectRequest & FastifyRequest<{ Params: { id: string }; Body: Body | undefined }>) {
  const current = await find(req);
  const { db } = req.server;
  const row = await changePropertyDefinition(db, req.tenant.project_id, req.principal.user.id, current, req.body ?? {});
  return (await presentPropertyDefinitions(db, [row]))[0]!;
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
    return paginated(req, page, count, await presentPropertyDefinitions(req.server.db, rows));
  },

  async property_definitions_retrieve(req) {
    return (await presentPropertyDefinitions(req.server.db, [await find(req)]))[0]!;
  },

  property_definitions_partial_update: update,
  property_definitions_update: update,

  async property_definitions_destroy(req, reply) {
    const current = await find(req);
    await deletePropertyDefinition(req.server.db, req.tenant.project_id, current);
    reply.code(204);
  },

  async property_definitions_seen_together_retrieve(req) {
    const names = req.query.event_names;
    const seen = await seenTogether(req.server.db, req.tenant.project_id, names, req.query.property_name);
    return Object.fromEntries(names.map((n) => [n, seen.has(n)]));
  },
} satisfies SomeHandlers;
