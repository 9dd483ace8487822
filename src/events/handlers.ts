import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { requestUrl } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import { decodeCursor, encodeCursor } from '../core/cursor.js';
import { dateValue } from '../core/dates.js';
import { parsePropertyFilters } from './filters.js';
import { getEvent, listEvents, listEventsJson, personIdByUuid, propertyValues, type EventQuery } from './queries.js';
import { eventsCsv } from './serialize.js';
import { presentEvents, presentEventsJson } from './present.js';
import { sendJsonText } from '../http/json-text.js';
import { answerFormat } from '../http/renderers.js';
import { toCsv } from './csv.js';
import { expressionList, selectedValues, whereConditions } from './expressions.js';
import { isUuid, rowIdOf } from '../core/ids.js';

const VALUES_WINDOW_MS = 7 * 24 * 3_600_000;
const COLUMNS = ['event', 'distinct_id'];

/** PostHog's events viewset adds a CSV renderer; the listing writes its own (its columns follow `select`). */
const wantsCsv = (req: FastifyRequest): boolean => answerFormat(req) === 'csv';

async function sendCsv(reply: FastifyReply, body: string): Promise<never> {
  await reply.type('text/csv; charset=utf-8').send(body);
  return undefined as never;
}

/**
 * `before`/`after` exactly as given (PostgreSQL keeps their microseconds), or relative (`-1d`); no offset means
 * UTC.
 */
function bound(attr: string, value: string): string {
  const iso = dateValue(value);
  if (!iso) {
    throw ApiError.validation(
      attr,
      'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].',
    );
  }
  if (/^-\d+[hdwmy]$/.test(value.trim())) return iso;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return `${value}T00:00:00Z`;
  return /[zZ]|[+-]\d{2}:?\d{2}$/.test(value) ? value : `${value}Z`;
}

function ascendingOf(orderBy: string | undefined): boolean {
  if (orderBy === undefined || orderBy === '') return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(orderBy);
  } catch {
    throw ApiError.validation('orderBy', 'orderBy must be a JSON list, e.g. ["-timestamp"].');
  }
  const list = Array.isArray(parsed) ? parsed : [parsed];
  if (list.length > 1 || (list.length === 1 && list[0] !== 'timestamp' && list[0] !== '-timestamp')) {
    throw ApiError.validation(
      'orderBy',
      'Only ["-timestamp"] (newest first) and ["timestamp"] (oldest first) are supported.',
    );
  }
  return list[0] === 'timestamp';
}

/** The cursor names the last event of the page; `before`/`after` beside it hold that event's timestamp. */
function cursorEventId(cursor: string): number {
  const id = decodeCursor(cursor);
  if (!Number.isSafeInteger(id) || (id as number) < 0) throw ApiError.validation('cursor', 'Invalid cursor.');
  return id as number;
}

async function personFilter(req: FastifyRequest, projectId: number, raw: string): Promise<number | null> {
  // Digits that name no row (0, or past int4) name no person: nothing matches.
  if (/^\d+$/.test(raw)) return rowIdOf(raw) ?? null;
  if (isUuid(raw)) return (await personIdByUuid(req.server.readDb, projectId, raw.toLowerCase())) ?? null;
  throw ApiError.validation('person_id', "A person's integer id or UUID is required.");
}

export const eventHandlers = {
  async events_list(req, reply) {
    const q = req.query;
    const projectId = req.tenant.project_id;
    // The listing may lag the writes a moment: it reads from the replica when there is one.
    const db = req.server.readDb;
    let joinPersons = false;
    const exprs = { teamId: projectId, timezone: req.tenant.timezone, usePerson: () => void (joinPersons = true) };
    const csv = wantsCsv(req);
    const where = await whereConditions(expressionList('where', q.where), exprs);
    // As PostHog's, the JSON answer is events whatever `select` says; the CSV's columns are its expressions.
    const expressions = csv ? expressionList('select', q.select) : [];
    const select = { expressions, values: await selectedValues(expressions, exprs) };
    const filters = parsePropertyFilters(q.properties);
    const ascending = ascendingOf(q.orderBy);
    const cursorId = q.cursor ? cursorEventId(q.cursor) : undefined;
    const { limit, offset } = pageOf(q);
    const personId = q.person_id !== undefined ? await personFilter(req, projectId, q.person_id) : undefined;
    const query: EventQuery = {
      projectId,
      event: q.event,
      distinctId: q.distinct_id,
      personId: personId ?? undefined,
      before: q.before !== undefined ? bound('before', q.before) : undefined,
      after: q.after !== undefined ? bound('after', q.after) : undefined,
      cursorId,
      ascending,
      filters,
      where,
      select: select.values,
      joinPersons,
      limit,
      offset,
    };
    /** The link to the page after `rows` (one row more than the page), by the page's last event. */
    const nextOf = (rows: { id: number; ts_text: string }[]) => {
      const last = rows[limit - 1];
      if (rows.length <= limit || !last) return null;
      const url = requestUrl(req);
      url.searchParams.set(ascending ? 'after' : 'before', last.ts_text);
      url.searchParams.set('cursor', encodeCursor(last.id));
      url.searchParams.delete('offset');
      return url.toString();
    };
    if (!csv) {
      // Each event as PostgreSQL wrote it, with its person and parsed elements.
      const rows = personId === null ? [] : await listEventsJson(db, query);
      const results = await presentEventsJson(db, projectId, rows.slice(0, limit), q.include_person === true);
      return sendJsonText(reply, `{"next":${JSON.stringify(nextOf(rows))},"results":[${results.join(',')}]}`);
    }
    const page = (personId === null ? [] : await listEvents(db, query)).slice(0, limit);
    if (!select.values.length)
      return sendCsv(reply, await eventsCsv(await presentEvents(db, projectId, page, q.include_person === true)));
    const records = page.map((r) => Object.fromEntries(select.expressions.map((e, i) => [e, r.selected?.[i]])));
    return sendCsv(reply, await toCsv(records, select.expressions));
  },

  async events_retrieve(req, reply) {
    const projectId = req.tenant.project_id;
    const row = await getEvent(req.server.db, projectId, req.params.id.toLowerCase());
    if (!row) throw ApiError.notFound(`No events exist for event UUID ${req.params.id}`);
    const [event] = await presentEvents(req.server.db, projectId, [row], req.query.include_person === true);
    if (wantsCsv(req)) return sendCsv(reply, await eventsCsv([event!]));
    return event!;
  },

  async events_values_retrieve(req, reply) {
    const q = req.query;
    if (!q.key) throw ApiError.validation('key', 'You must provide a key');
    const isColumn = q.is_column === true;
    if (isColumn && !COLUMNS.includes(q.key)) {
      throw ApiError.validation('key', `With is_column, key must be one of: ${COLUMNS.join(', ')}.`);
    }
    const names = await propertyValues(req.server.readDb, {
      projectId: req.tenant.project_id,
      key: q.key,
      isColumn,
      value: q.value || undefined,
      eventNames: q.event_name,
      since: new Date(Date.now() - VALUES_WINDOW_MS),
    });
    const results = names.map((name) => ({ name }));
    if (wantsCsv(req)) return sendCsv(reply, await toCsv(results, ['name']));
    return results;
  },
} satisfies SomeHandlers;
