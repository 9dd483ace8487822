import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { rejectNulInJson } from '../http/input-guard.js';
import { pageOf, paginated } from '../http/pagination.js';
import {
  getPropertyDefinition,
  listPropertyDefinitions,
  updatePropertyDefinition,
  type PropertyDefinitionChanges,
  type PropertyDefinitionRow,
} from '../db/queries/property-definitions.js';
import { getUsers } from '../db/queries/users.js';
import { normalizeTags } from '../dashboards/tags.js';
import { serializePropertyDefinition, userIdsOf } from '../serializers/property-definitions.js';
import { PropertyKind } from '../capture/property-definitions.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** PostHog's numbers; group and session properties are never recorded here, so they list nothing. */
const TYPES: Record<string, number> = { event: PropertyKind.event, person: PropertyKind.person, group: 3, session: 4 };

/** A JSON array of names in a query parameter, as PostHog's frontend sends them. */
function nameList(attr: string, text: string | undefined): string[] | undefined {
  if (text === undefined || text === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string')) {
    throw ApiError.validation(attr, `${attr} must be a JSON list of names.`);
  }
  rejectNulInJson(attr, parsed);
  return parsed;
}

async function present(req: FastifyRequest, rows: PropertyDefinitionRow[]) {
  const users = await getUsers(req.server.db, userIdsOf(rows));
  return rows.map((d) => serializePropertyDefinition(d, users));
}

async function find(req: FastifyRequest, id: string): Promise<PropertyDefinitionRow> {
  const row = UUID.test(id) ? await getPropertyDefinition(req.server.db, req.tenant.project_id!, id.toLowerCase()) : undefined;
  if (!row) throw ApiError.notFound();
  return row;
}

export const propertyDefinitionHandlers = {
  async property_definitions_list(req) {
    const q = req.query;
    const page = pageOf(q);
    const { count, rows } = await listPropertyDefinitions(
      req.server.db,
      req.tenant.project_id!,
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
        names: q.properties === undefined ? undefined : q.properties.split(',').map((n) => n.trim()).filter(Boolean),
      },
      page,
    );
    return paginated(req, page, count, await present(req, rows));
  },

  async property_definitions_retrieve(req) {
    return (await present(req, [await find(req, req.params.id)]))[0]!;
  },

  async property_definitions_partial_update(req) {
    const body = req.body ?? {};
    if (body.hidden === true && body.verified === true) {
      throw ApiError.validation(null, 'A property cannot be both hidden and verified');
    }
    const current = await find(req, req.params.id);
    const userId = req.principal.user.id;
    const changes: PropertyDefinitionChanges = { updated_by_id: userId };
    if (body.description !== undefined) changes.description = body.description;
    if (body.tags !== undefined) changes.tags = normalizeTags(body.tags);
    if (body.property_type !== undefined) {
      changes.property_type = body.property_type;
      changes.is_numerical = body.property_type === 'Numeric';
    }
    if (body.verified === true && !current.verified) {
      Object.assign(changes, { verified: true, verified_at: new Date(), verified_by_id: userId, hidden: false });
    } else if (body.verified === false) {
      Object.assign(changes, { verified: false, verified_at: null, verified_by_id: null });
    }
    if (body.hidden !== undefined) changes.hidden = body.hidden;
    if (body.hidden === true) Object.assign(changes, { verified: false, verified_at: null, verified_by_id: null });
    const row = await updatePropertyDefinition(req.server.db, req.tenant.project_id!, current.id, changes);
    if (!row) throw ApiError.notFound();
    return (await present(req, [row]))[0]!;
  },
} satisfies SomeHandlers;
