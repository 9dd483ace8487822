import { randomUUID } from 'node:crypto';
import { ApiError } from '../core/errors.js';
import { elementsToChain } from './elements.js';
import { malformed, noData } from './decode.js';
import { isUuid } from '../core/ids.js';
import { mapInTurns } from '../core/turns.js';

/** An event as it will be stored. */
export interface CapturedEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  timestamp: Date;
  elements_chain: string;
}

type Json = Record<string, unknown>;

const FUTURE_TOLERANCE_MS = 23 * 3_600_000;
const MAX_EVENT_NAME = 400;
const MAX_DISTINCT_ID = 200;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

function pythonType(v: unknown): string {
  if (v === null) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (typeof v === 'boolean') return 'bool';
  return 'dict';
}

const NOT_STORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const STORABLE = /^[^\u0000\uD800-\uDFFF]*$/;

/**
 * PostgreSQL text and jsonb refuse NUL characters and lone surrogates; PostHog replaces them too.
 * Values that need no change are returned as they are, so a clean event costs no copy.
 */
export function sanitize<T>(value: T): T {
  if (typeof value === 'string') return (STORABLE.test(value) ? value : value.replace(NOT_STORABLE, '\uFFFD')) as T;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const clean = sanitize(value[i]);
      if (clean !== value[i]) (out ??= value.slice())[i] = clean;
    }
    return (out ?? value) as T;
  }
  if (isObject(value)) {
    for (const k in value) {
      if (sanitize(k) !== k || sanitize(value[k]) !== value[k]) {
        return Object.fromEntries(Object.entries(value).map(([key, v]) => [sanitize(key), sanitize(v)])) as T;
      }
    }
  }
  return value;
}

function invalid(detail: string, attr: string | null = null): ApiError {
  return new ApiError(400, 'validation_error', 'invalid_payload', `Invalid payload: ${detail}`, attr);
}

export interface CapturePayload {
  token: string | undefined;
  events: unknown[];
  sentAt: unknown;
}

/** The events of a decoded body and the project token that names their project. */
export function readPayload(body: unknown, query: Record<string, unknown>): CapturePayload {
  let events: unknown[];
  let sentAt: unknown;
  let envelope: Json = {};
  if (body === undefined || body === null) throw noData();
  if (Array.isArray(body)) {
    events = body;
  } else if (isObject(body)) {
    envelope = body;
    if ('batch' in body) {
      if (!Array.isArray(body.batch)) throw malformed('`batch` must be a list of events.');
      events = body.batch;
    } else {
      events = [body];
    }
    sentAt = body.sent_at;
  } else {
    throw malformed('expected a JSON object or a list of events.');
  }
  if (!events.length) throw noData();
  const first = isObject(events[0]) ? events[0] : {};
  const firstProps = isObject(first.properties) ? first.properties : {};
  const token =
    nonEmpty(envelope.api_key) ??
    nonEmpty(envelope.token) ??
    nonEmpty(envelope.$token) ??
    nonEmpty(first.api_key) ??
    nonEmpty(first.token) ??
    nonEmpty(first.$token) ??
    nonEmpty(firstProps.token) ??
    nonEmpty(query.api_key) ??
    nonEmpty(query.token);
  return { token, events, sentAt };
}

function parseTime(v: unknown): Date | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return new Date(v);
  if (typeof v !== 'string' || !v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/**
 * PostHog's clock-skew correction: with `sent_at`, the event happened (sent_at - timestamp) before
 * the server received it; with only `offset`, that many milliseconds before. Far-future and
 * unreadable timestamps fall back to the receive time.
 */
export function eventTimestamp(raw: Json, batchSentAt: unknown, now: Date): Date {
  const timestamp = parseTime(raw.timestamp);
  const props = isObject(raw.properties) ? raw.properties : {};
  let result = now;
  if (timestamp) {
    const sentAt = parseTime(raw.sent_at) ?? parseTime(batchSentAt);
    result =
      sentAt && !props.$ignore_sent_at ? new Date(now.getTime() - (sentAt.getTime() - timestamp.getTime())) : timestamp;
  } else if (typeof raw.offset === 'number' && Number.isFinite(raw.offset)) {
    result = new Date(now.getTime() - raw.offset);
  }
  const year = result.getUTCFullYear();
  if (Number.isNaN(result.getTime()) || year < 1 || year > 9999) return now;
  if (result.getTime() - now.getTime() > FUTURE_TOLERANCE_MS) return now;
  return result;
}

function distinctIdOf(raw: Json, props: Json): string {
  const value = raw.$distinct_id ?? props.distinct_id ?? raw.distinct_id;
  if (value === undefined || value === null || value === '') {
    throw ApiError.validation('distinct_id', 'You need to set user distinct ID field `distinct_id`.', 'required');
  }
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (!text.trim()) throw invalid('Event field "distinct_id" should not be blank!', 'distinct_id');
  return text.slice(0, MAX_DISTINCT_ID);
}

/** Validates one event and shapes it for storage; any problem rejects the whole request. */
export function normalizeEvent(raw: unknown, batchSentAt: unknown, now: Date): CapturedEvent {
  if (!isObject(raw)) throw invalid(`every event must be a JSON object, received ${pythonType(raw)}!`);
  if (raw.properties !== undefined && raw.properties !== null && !isObject(raw.properties)) {
    throw invalid(`Properties must be a JSON object, received ${pythonType(raw.properties)}!`, 'properties');
  }
  const properties: Json = { ...(isObject(raw.properties) ? raw.properties : {}) };
  const event = raw.event;
  if (typeof event !== 'string' || !event) {
    throw ApiError.validation('event', 'You need to set user event name field `event`.', 'required');
  }
  if (event.length > MAX_EVENT_NAME) throw invalid(`Event name is longer than ${MAX_EVENT_NAME} characters.`, 'event');
  const distinct_id = distinctIdOf(raw, properties);
  let uuid: string;
  if (raw.uuid === undefined || raw.uuid === null || raw.uuid === '') uuid = randomUUID();
  else if (typeof raw.uuid === 'string' && isUuid(raw.uuid)) uuid = raw.uuid.toLowerCase();
  else throw invalid('Event field "uuid" is not a valid UUID.', 'uuid');

  // Some SDKs send person updates beside the properties rather than inside them.
  for (const key of ['$set', '$set_once'] as const) {
    if (isObject(raw[key]) && properties[key] === undefined) properties[key] = raw[key];
  }
  let elements_chain = typeof raw.elements_chain === 'string' ? raw.elements_chain : '';
  if (!elements_chain && typeof properties.$elements_chain === 'string') elements_chain = properties.$elements_chain;
  if (!elements_chain && Array.isArray(properties.$elements)) elements_chain = elementsToChain(properties.$elements);
  delete properties.$elements;
  delete properties.$elements_chain;

  return {
    uuid,
    event: sanitize(event),
    distinct_id: sanitize(distinct_id),
    properties: sanitize(properties),
    timestamp: eventTimestamp(raw, batchSentAt, now),
    elements_chain: sanitize(elements_chain),
  };
}

/**
 * Every event of a request, in order, through `normalizeEvent`; a large batch is done in turns so
 * that other requests are served meanwhile. The first invalid event rejects the request.
 */
export function normalizeEvents(events: unknown[], batchSentAt: unknown, now: Date): Promise<CapturedEvent[]> {
  return mapInTurns(events, (raw) => normalizeEvent(raw, batchSentAt, now));
}
