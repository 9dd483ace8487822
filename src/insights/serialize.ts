import type { components } from '../../generated/api.js';
import type { UserBasicRow } from '../users/queries.js';
import { serializeUserBasic } from '../users/serialize.js';
import type { CachedResult } from './cache.js';
import type { InsightRow, InsightTile } from './queries.js';
import type { JsonText } from '../core/json-text.js';

type Schemas = components['schemas'];
type Insight = Schemas['Insight'];

/** PostHog's insight permissions (user_permissions.py), worked out from the dashboards it is on. */
export interface InsightPermissions {
  effective_restriction_level: 21 | 37;
  effective_privilege_level: 21 | 37;
  user_access_level: 'viewer' | 'editor' | 'manager' | null;
}

export interface InsightContext {
  users: Map<number, UserBasicRow>;
  tiles: InsightTile[];
  permissions: InsightPermissions;
  /** The result per `refresh`; undefined for a `basic` read, which leaves results out. */
  result: CachedResult | undefined;
  /** The query as shown: with a dashboard's filters applied when read in a dashboard's context. */
  query: Record<string, unknown> | null;
}

const userOrNull = (users: Map<number, UserBasicRow>, id: number | null) => {
  const user = id === null ? undefined : users.get(id);
  return user ? serializeUserBasic(user) : null;
};

/** The fields of a computed answer an insight shows (PostHog's InsightResult). */
function answerFields(text: string | null) {
  const a = text === null ? {} : (JSON.parse(text) as Record<string, unknown>);
  return {
    result: a.results ?? a.result ?? null,
    hasMore: (a.hasMore as boolean | undefined) ?? null,
    columns: (a.columns as unknown[] | undefined) ?? null,
    types: (a.types as unknown[] | undefined) ?? null,
    hogql: (a.hogql as string | undefined) ?? null,
    resolved_date_range: (a.resolved_date_range as Record<string, unknown> | undefined) ?? null,
  };
}

type AnswerFields = ReturnType<typeof answerFields>;

/** An answer's `answerFields` as JSON text: kept with the answer, for reads that splice it in. */
export const insightFieldsText = (text: string): string => JSON.stringify(answerFields(text));

/** An insight but for the fields of its answer (`answerFields`). */
function serializeInsightBody(row: InsightRow, ctx: InsightContext): Omit<Schemas['Insight'], keyof AnswerFields> {
  const r = ctx.result;
  return {
    id: row.id,
    short_id: row.short_id,
    name: row.name,
    derived_name: row.derived_name,
    filters: row.query ? {} : row.filters,
    query: ctx.query as Schemas['Insight']['query'],
    order: row.order,
    deleted: row.deleted,
    dashboards: ctx.tiles.map((t) => t.dashboard_id),
    dashboard_tiles: ctx.tiles.map((t) => ({ id: t.id, dashboard_id: t.dashboard_id, deleted: t.deleted })),
    last_refresh: r?.last_refresh ?? null,
    cache_target_age: r?.cache_target_age ?? null,
    next_allowed_client_refresh: r?.next_allowed_client_refresh ?? null,
    is_cached: r?.is_cached ?? false,
    query_status: (r?.query_status ?? null) as Schemas['Insight']['query_status'],
    timezone: r?.timezone ?? null,
    cache_key: r?.cache_key ?? null,
    filters_hash: r?.cache_key ?? null,
    created_at: row.created_at.toISOString(),
    created_by: userOrNull(ctx.users, row.created_by_id),
    description: row.description,
    updated_at: row.updated_at.toISOString(),
    tags: row.tags,
    favorited: row.favorited,
    saved: row.saved,
    last_modified_at: row.last_modified_at.toISOString(),
    last_modified_by: userOrNull(ctx.users, row.last_modified_by_id),
    is_sample: false,
    effective_restriction_level: ctx.permissions.effective_restriction_level,
    effective_privilege_level: ctx.permissions.effective_privilege_level,
    user_access_level: ctx.permissions.user_access_level,
    alerts: [],
    last_viewed_at: null,
  };
}

export function serializeInsight(row: InsightRow, ctx: InsightContext): Schemas['Insight'] {
  return { ...serializeInsightBody(row, ctx), ...answerFields(ctx.result?.answer ?? null) };
}

const NO_ANSWER = JSON.stringify(answerFields(null));

/**
 * `serializeInsight` as JSON text, its answer's fields given as the text of a JSON object (as
 * PostgreSQL writes them from a cached answer), or null for none: spliced in, never parsed.
 */
export function insightText(row: InsightRow, ctx: InsightContext, answerFieldsText: string | null): JsonText<Insight> {
  const body = JSON.stringify(serializeInsightBody(row, ctx));
  return `${body.slice(0, -1)},${(answerFieldsText ?? NO_ANSWER).slice(1)}`;
}
