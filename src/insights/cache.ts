import { createHash } from 'node:crypto';
import type { components } from '../../generated/api.js';
import type { AsyncQueries } from '../query/async.js';
import { isInsightNode, prepareInsight, runInsight } from '../query/kinds/index.js';
import type { JsonAnswer } from '../query/answer.js';
import { projectTestAccountFilters } from '../query/queries.js';
import { runQuery, type QueryEngine } from '../query/run.js';
import { presentQueryStatus } from '../query/status-serialize.js';
import { countHit, readCaches, writeCache, type CachedAnswer } from './cache-queries.js';
import { intervalOf, type RunnableNode } from './query-node.js';
import { insightFieldsText } from './serialize.js';

type QueryStatus = components['schemas']['QueryStatus'];

/** PostHog's ExecutionMode values, by their `refresh` names. */
export type RefreshMode =
  | 'force_cache'
  | 'blocking'
  | 'force_blocking'
  | 'async'
  | 'lazy_async'
  | 'force_async'
  | 'async_except_on_cache_miss';

/** PostHog's execution_mode_from_refresh: `true` blocks, anything unknown or absent only reads the cache. */
export function refreshMode(refresh: string | boolean | undefined, fallback: RefreshMode = 'force_cache'): RefreshMode {
  if (refresh === undefined) return fallback;
  if (refresh === true || refresh === 'true') return 'blocking';
  if (refresh === false || refresh === 'false') return 'force_cache';
  const modes = ['force_cache', 'blocking', 'force_blocking', 'async', 'lazy_async', 'force_async'];
  return modes.includes(refresh) || refresh === 'async_except_on_cache_miss' ? (refresh as RefreshMode) : fallback;
}

/** PostHog's shared_insights_execution_mode: a shared view never forces a computation. */
export function sharedMode(mode: RefreshMode): RefreshMode {
  return mode === 'force_blocking' ? 'blocking' : mode === 'force_async' ? 'async' : mode;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** PostHog's staleness_threshold_map (posthog/caching/utils.py), default and lazy, by interval. */
const FRESH_FOR: Record<'default' | 'lazy', Record<string, number>> = {
  default: { none: 6 * HOUR, minute: 5 * MINUTE, hour: HOUR, day: 6 * HOUR, week: DAY, month: 2 * DAY },
  lazy: { none: 12 * HOUR, minute: 15 * MINUTE, hour: 2 * HOUR, day: 12 * HOUR, week: DAY, month: 2 * DAY },
};
/** How long a computed answer is kept at all (served stale until then on `force_cache`), and the per-project bound. */
export const CACHE_KEEP_MS = 7 * DAY;
export const CACHE_MAX_ROWS = 2000;
/** Answers larger than this are answered but not kept: a cache row is read whole on every hit. */
export const CACHE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * PostHog's cache_target_age for an insight kind: when a result computed at `lastRefresh` stops being
 * fresh, by its interval.
 */
export function cacheTargetAge(interval: string | null, lastRefresh: Date, lazy = false): Date {
  const table = FRESH_FOR[lazy ? 'lazy' : 'default'];
  return new Date(lastRefresh.getTime() + (table[interval ?? 'none'] ?? table.none!));
}

/** A relative bound (`-24h`) moves with the clock; a date or date-time is pinned. */
const pinnedBound = (text: unknown): Date | null =>
  typeof text === 'string' && !text.trim().startsWith('-') && !Number.isNaN(Date.parse(text)) ? new Date(text) : null;

/** How a kind's cached answer ages: until when it is fresh (blocking serves it), and the cache_target_age shown. */
interface Aging {
  fresh(lastRefresh: Date, lazy: boolean): boolean;
  targetAge(lastRefresh: Date): Date;
}

/**
 * PostHog's rules by runner: an insight kind ages by its interval; a HogQLQuery is fresh for the
 * QueryRunner's default 5 minutes (15 lazily) while its cache_target_age says a day insight's 6 hours;
 * an EventsQuery is always stale unless both its bounds are pinned dates (`after: "all"` counts as
 * pinned), and then never once its `before` had passed when it was computed.
 */
function agingOf(node: RunnableNode): Aging {
  const now = () => Date.now();
  if (isInsightNode(node)) {
    const interval = intervalOf(node);
    return {
      fresh: (at, lazy) => now() <= cacheTargetAge(interval, at, lazy).getTime(),
      targetAge: (at) => cacheTargetAge(interval, at),
    };
  }
  if (node.kind === 'HogQLQuery') {
    return {
      fresh: (at, lazy) => now() <= cacheTargetAge('minute', at, lazy).getTime(),
      targetAge: (at) => cacheTargetAge('day', at),
    };
  }
  const before = pinnedBound(node.before);
  const pinned = before !== null && (node.after === 'all' || pinnedBound(node.after) !== null);
  return {
    fresh: (at, lazy) =>
      pinned && (before.getTime() < at.getTime() - 10_000 || now() <= cacheTargetAge(null, at, lazy).getTime()),
    targetAge: (at) => (pinned ? cacheTargetAge('minute', at) : at),
  };
}

/**
 * PostHog's minimum wait before a client may ask for a recomputation (`next_allowed_client_refresh`):
 * 3 minutes for insights by minute or hour, 15 for other insights, 1 for HogQL and events queries.
 */
function refreshFrequency(interval: string | null, node: RunnableNode): number {
  if (!isInsightNode(node)) return MINUTE;
  return interval === 'minute' || interval === 'hour' ? 3 * MINUTE : 15 * MINUTE;
}

/** JSON with object keys sorted at every depth: the same query written two ways has one key. */
function normalized(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalized);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, normalized((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * The cache key: the project, its timezone and the normalized query (with the filters and variables
 * applied), and the project's test account filters when the query applies them, so that an answer
 * computed under the old filters is not served once the project's settings change.
 */
export function cacheKey(
  projectId: number,
  timezone: string,
  node: RunnableNode,
  testAccountFilters: unknown[] | null = null,
): string {
  const key = { team_id: projectId, timezone, query: node, version: 1 };
  const payload = JSON.stringify(normalized(testAccountFilters ? { ...key, testAccountFilters } : key));
  return `cache_${createHash('sha256').update(payload).digest('hex').slice(0, 40)}`;
}

/** Whether any node of the query asks for the project's test account filters. */
export function wantsTestAccounts(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(wantsTestAccounts);
  if (!value || typeof value !== 'object') return false;
  return Object.entries(value).some(([k, v]) => (k === 'filterTestAccounts' ? v === true : wantsTestAccounts(v)));
}

/** `cacheKey` for a request: the test account filters read from the project when the query applies them. */
async function keyOf(ctx: CacheContext, node: RunnableNode): Promise<string> {
  const filters = wantsTestAccounts(node) ? await projectTestAccountFilters(ctx.engine.db, ctx.projectId) : null;
  return cacheKey(ctx.projectId, ctx.timezone, node, filters);
}

/**
 * The cache fields of the node's answer under `key`: computed (or cached, `cached`) at `at`, or none
 * (`at` null), with the background computation's status if one was started.
 */
export function cacheFieldsOf(node: RunnableNode, key: string, timezone: string, aging = agingOf(node)) {
  const frequency = refreshFrequency(intervalOf(node), node);
  return (at: Date | null, cached: boolean, status: QueryStatus | null = null): CacheFields => ({
    is_cached: cached,
    last_refresh: at?.toISOString() ?? null,
    next_allowed_client_refresh: at ? new Date(at.getTime() + frequency).toISOString() : null,
    cache_target_age: at ? aging.targetAge(at).toISOString() : null,
    cache_key: key,
    timezone,
    query_status: status,
  });
}

export interface CacheContext {
  engine: QueryEngine;
  asyncQueries: AsyncQueries;
  organizationId: string;
  projectId: number;
  /** The project's timezone, part of every cache key (the request's project carries it). */
  timezone: string;
}

/** The cache fields every answer carries (PostHog's CachedQueryResponse). */
export interface CacheFields {
  is_cached: boolean;
  last_refresh: string | null;
  next_allowed_client_refresh: string | null;
  cache_target_age: string | null;
  cache_key: string;
  timezone: string;
  query_status: QueryStatus | null;
}

/** The cache fields and the answer's text if any. */
export interface CachedResult extends CacheFields {
  /** The answer's JSON object text (results, columns, ...), or null on a miss that computed nothing. */
  answer: string | null;
}

/**
 * What `cachedOutcome` found or computed: a cached answer's text, or a HogQL or events answer just
 * computed (kept unjoined, so a large one is streamed and never built as one string), or neither.
 */
export interface CacheOutcome {
  fields: CacheFields;
  text: string | null;
  computed: JsonAnswer | null;
}

async function compute(ctx: CacheContext, node: RunnableNode): Promise<string | JsonAnswer> {
  const { engine, organizationId, projectId, timezone } = ctx;
  if (isInsightNode(node)) {
    return JSON.stringify(await runInsight({ engine, organizationId }, projectId, await prepareInsight(node)));
  }
  return runQuery(engine, organizationId, projectId, timezone, node);
}

/**
 * A query's answer through the shared cache, as PostHog's QueryRunner.run decides by `mode`: a fresh
 * cached answer is served (lazily fresh for `lazy_async`); `force_cache` never computes; the blocking
 * modes compute and store; the asynchronous ones start the computation in the background (its status
 * in `query_status`, pollable at `/query/{id}/` under `clientId` or a new id) and answer with what is
 * cached meanwhile.
 */
export async function cachedOutcome(
  ctx: CacheContext,
  node: RunnableNode,
  mode: RefreshMode,
  clientId?: string | null,
  prefetched?: { key: string; found: CachedAnswer | undefined },
): Promise<CacheOutcome> {
  const { engine, projectId, timezone } = ctx;
  const db = engine.db;
  const key = prefetched?.key ?? (await keyOf(ctx, node));
  const aging = agingOf(node);
  const fields = cacheFieldsOf(node, key, timezone, aging);
  const store = async (text: string, at: Date) => {
    if (Buffer.byteLength(text) > CACHE_MAX_BYTES) return;
    await writeCache(
      db,
      projectId,
      key,
      {
        text,
        insightFields: insightFieldsText(text),
        last_refresh: at,
        expires_at: new Date(at.getTime() + CACHE_KEEP_MS),
      },
      CACHE_MAX_ROWS,
    );
  };
  const inBackground = async () => {
    const row = await ctx.asyncQueries.start(ctx.organizationId, projectId, timezone, clientId, node, store);
    return presentQueryStatus(row).query_status;
  };
  const none = { text: null, computed: null };

  const cached = forces(mode)
    ? undefined
    : prefetched
      ? prefetched.found
      : (await readCaches(db, projectId, [key])).get(key);
  if (mode === 'force_async') return { fields: fields(null, false, await inBackground()), ...none };
  if (cached) {
    const at = cached.last_refresh;
    const hit = { text: cached.text, computed: null };
    const served = mode === 'force_cache' || aging.fresh(at, mode === 'lazy_async') || mode !== 'blocking';
    if (served) countHit(db, projectId, key);
    if (mode === 'force_cache' || aging.fresh(at, mode === 'lazy_async')) return { fields: fields(at, true), ...hit };
    if (mode !== 'blocking') return { fields: fields(at, true, await inBackground()), ...hit };
  } else if (mode === 'force_cache') {
    return { fields: fields(null, false), ...none };
  } else if (mode === 'async' || mode === 'lazy_async') {
    return { fields: fields(null, false, await inBackground()), ...none };
  }
  const at = new Date();
  const answer = await compute(ctx, node);
  if (typeof answer === 'string') {
    await store(answer, at);
    return { fields: fields(at, false), text: answer, computed: null };
  }
  if (answer.byteLength <= CACHE_MAX_BYTES) await store(answer.text(), at);
  return { fields: fields(at, false), text: null, computed: answer };
}

/** The modes that never serve a cached answer. */
const forces = (mode: RefreshMode) => mode === 'force_blocking' || mode === 'force_async';

/**
 * `cachedOutcome` of several queries (a dashboard's tiles), each answer as one text (an insight's
 * result is read from it): what the cache holds for all of them is read in one statement, and only
 * the ones it cannot serve are computed, one after the other.
 */
export async function cachedAnswers(
  ctx: CacheContext,
  nodes: RunnableNode[],
  mode: RefreshMode,
): Promise<CachedResult[]> {
  // The project's test account filters are read once for all the tiles that apply them.
  let filters: Promise<unknown[]> | undefined;
  const testFilters = (node: RunnableNode) =>
    wantsTestAccounts(node) ? (filters ??= projectTestAccountFilters(ctx.engine.db, ctx.projectId)) : null;
  const keys = await Promise.all(
    nodes.map(async (node) => cacheKey(ctx.projectId, ctx.timezone, node, await testFilters(node))),
  );
  const found = forces(mode) ? new Map<string, CachedAnswer>() : await readCaches(ctx.engine.db, ctx.projectId, keys);
  const out: CachedResult[] = [];
  for (const [i, node] of nodes.entries()) {
    const key = keys[i]!;
    const { fields, text, computed } = await cachedOutcome(ctx, node, mode, null, { key, found: found.get(key) });
    out.push({ ...fields, answer: text ?? computed?.text() ?? null });
  }
  return out;
}
