import type { FastifyReply } from 'fastify';
import type { RequestOf, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { isUuid, rowIdOf } from '../core/ids.js';
import { pageOf } from '../core/paging.js';
import { paginated } from '../http/pagination.js';
import { answerFormat } from '../http/renderers.js';
import { parsePropertyFilters, type FilterNode } from '../events/filters.js';
import { deletePersonEvents, deletePersons, personIdsOf, splitPerson } from './queries.js';
import { findPersons, loadPerson, setPersonProperties, unsetPersonProperty } from './persons.js';
import { serializePerson, serializePersonActivity } from './serialize.js';
import { logPersonActivity, personActivityPage, personChange } from './activity.js';
import { activityLogPage } from '../http/activity-log.js';

/** PostHog's limit on one bulk deletion. */
export const BULK_DELETE_LIMIT = 1000;

/**
 * The most persons one CSV answer holds. PostHog's export takes every matching person up to 300,000
 * (CSV_EXPORT_LIMIT) from ClickHouse; one answer built in this process's memory stops sooner.
 */
export const PERSONS_CSV_LIMIT = 10_000;

/** Only filters on person properties apply to persons (PostHog drops the others here too). */
function personFiltersOnly(node: FilterNode | undefined): FilterNode | undefined {
  if (!node) return undefined;
  if (node.kind === 'property') return node.type === 'person' ? node : undefined;
  const values = node.values.map(personFiltersOnly).filter((v): v is FilterNode => v !== undefined);
  return values.length ? { ...node, values } : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A bare 202 (PostHog answers these actions so; the work here is done by then). */
function accepted(reply: FastifyReply): never {
  return reply.code(202).send() as never;
}

type ItemOp = 'persons_partial_update' | 'persons_update';

async function setProperties(req: RequestOf<ItemOp>, reply: FastifyReply) {
  const person = await loadPerson(req.server.db, req.tenant.project_id, req.params.id);
  const properties = req.body?.properties;
  if (properties === undefined || properties === null) throw ApiError.required('properties');
  if (!isObject(properties)) throw ApiError.validation('properties', 'Expected a dictionary of items.', 'invalid');
  await setPersonProperties(req.server.db, req.tenant.project_id, person, properties);
  await logUpdated(req, person.id);
  return accepted(reply);
}

/** PostHog's entry for properties set through the API (its `_set_properties`). */
function logUpdated(req: RequestOf<ItemOp | 'persons_update_property_create'>, personId: number) {
  return logPersonActivity(req.server.db, req.tenant.project_id, req.principal.user.id, [
    { personId, activity: 'updated', detail: { name: null, changes: [personChange('changed', 'properties')] } },
  ]);
}

export const personHandlers = {
  async persons_list(req) {
    const q = req.query;
    // A CSV is PostHog's export of every matching person, not a page.
    const page = answerFormat(req) === 'csv' ? { limit: PERSONS_CSV_LIMIT, offset: 0 } : pageOf(q);
    const filters = {
      distinctId: q.distinct_id,
      email: q.email,
      search: q.search,
      properties: personFiltersOnly(parsePropertyFilters(q.properties as string | undefined)),
    };
    const { count, rows } = await findPersons(req.server.db, req.tenant.project_id, filters, page);
    return paginated(req, page, count, rows.map(serializePerson));
  },

  async persons_retrieve(req) {
    return serializePerson(await loadPerson(req.server.db, req.tenant.project_id, req.params.id));
  },

  persons_partial_update: setProperties,
  persons_update: setProperties,

  async persons_destroy(req, reply) {
    const { db } = req.server;
    const person = await loadPerson(db, req.tenant.project_id, req.params.id);
    const withEvents = req.query.delete_events === true;
    const deleted = await deletePersons(db, req.tenant.project_id, [person.id], withEvents, req.principal.user.id);
    // Absorbed by a merge between the read and the locks: the person this path named is gone.
    if (!deleted) throw ApiError.notFound();
    return accepted(reply);
  },

  async persons_bulk_delete_create(req, reply) {
    const body = req.body ?? {};
    const distinctIds = body.distinct_ids?.length ? body.distinct_ids : req.query.distinct_ids;
    const ids = body.ids?.length ? body.ids : req.query.ids;
    const withEvents = body.delete_events ?? req.query.delete_events ?? false;
    const { db } = req.server;
    let persons: number[];
    if (distinctIds?.length) {
      if (distinctIds.length > BULK_DELETE_LIMIT)
        throw ApiError.validation(null, `You can only pass ${BULK_DELETE_LIMIT} distinct_ids in one call`);
      persons = await personIdsOf(db, req.tenant.project_id, { distinctIds });
    } else if (ids?.length) {
      if (ids.length > BULK_DELETE_LIMIT)
        throw ApiError.validation(null, `You can only pass ${BULK_DELETE_LIMIT} ids in one call`);
      const text = ids.map(String);
      persons = await personIdsOf(db, req.tenant.project_id, {
        uuids: text.filter(isUuid).map((u) => u.toLowerCase()),
        ids: text.map(rowIdOf).filter((id) => id !== undefined),
      });
    } else {
      throw ApiError.validation(null, 'You need to specify either distinct_ids or ids');
    }
    await deletePersons(db, req.tenant.project_id, persons, withEvents, req.principal.user.id);
    return accepted(reply);
  },

  async persons_update_property_create(req, reply) {
    const body = isObject(req.body) ? req.body : {};
    const value = 'value' in body ? body.value : req.query.value;
    const key = body.key ?? req.query.key;
    // PostHog checks `value` first, and treats null as missing.
    if (value === undefined || value === null) throw ApiError.required('value');
    if (key === undefined || key === null || key === '') throw ApiError.required('key');
    const person = await loadPerson(req.server.db, req.tenant.project_id, req.params.id);
    await setPersonProperties(req.server.db, req.tenant.project_id, person, { [key]: value });
    await logUpdated(req, person.id);
    return accepted(reply);
  },

  async persons_delete_property_create(req, reply) {
    const key = req.body?.$unset ?? req.query.$unset;
    if (key === undefined || key === '') throw ApiError.required('$unset');
    const person = await loadPerson(req.server.db, req.tenant.project_id, req.params.id);
    await unsetPersonProperty(req.server.db, req.tenant.project_id, person, key);
    await logPersonActivity(req.server.db, req.tenant.project_id, req.principal.user.id, [
      {
        personId: person.id,
        activity: 'delete_property',
        detail: { name: person.uuid, changes: [personChange('changed')] },
      },
    ]);
    reply.code(201);
    return { success: true };
  },

  async persons_split_create(req, reply) {
    const { db } = req.server;
    const person = await loadPerson(db, req.tenant.project_id, req.params.id);
    const main = req.body?.main_distinct_id;
    if (main !== undefined && !person.distinct_ids.includes(main))
      throw ApiError.validation('main_distinct_id', "This distinct id is not one of the person's.");
    if (!(await splitPerson(db, req.tenant.project_id, person.id, main, req.principal.user.id)))
      throw ApiError.notFound();
    reply.code(201);
    return { success: true };
  },

  async persons_delete_events_create(req, reply) {
    const { db } = req.server;
    const person = await loadPerson(db, req.tenant.project_id, req.params.id);
    if (!(await deletePersonEvents(db, req.tenant.project_id, person.id))) throw ApiError.notFound();
    return accepted(reply);
  },

  async persons_activity_retrieve(req) {
    const { db } = req.server;
    return activityLogPage(
      req,
      req.query,
      (limit, page) => personActivityPage(db, req.tenant.project_id, undefined, limit, page),
      serializePersonActivity,
    );
  },

  async persons_activity_retrieve_2(req) {
    const { db } = req.server;
    const person = await loadPerson(db, req.tenant.project_id, req.params.id);
    return activityLogPage(
      req,
      req.query,
      (limit, page) => personActivityPage(db, req.tenant.project_id, person.id, limit, page),
      serializePersonActivity,
    );
  },
} satisfies SomeHandlers;
