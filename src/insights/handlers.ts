import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';
import type { JsonText } from '../core/json-text.js';
import { viewerOf } from '../dashboards/load.js';
import { normalizeTags } from '../core/tags.js';
import { jsonPage, sendJsonText } from '../http/json-text.js';
import type { ProjectRequest, RequestOf, SomeHandlers } from '../http/types.js';
import { refreshMode, type CacheContext } from './cache.js';
import { dashboardContext, loadInsight } from './load.js';
import { presentInsight, presentInsights } from './present.js';
import { listInsights } from './queries.js';
import { changeInsight, createInsight } from './save.js';

type Schemas = components['schemas'];

export function cacheContext(req: ProjectRequest): CacheContext {
  const { queries, asyncQueries } = req.server;
  return {
    engine: queries,
    asyncQueries,
    organizationId: req.tenant.organization_id,
    projectId: req.tenant.project_id,
    timezone: req.tenant.timezone,
  };
}

function dashboardIds(text: string | undefined): number[] | undefined {
  if (!text) return undefined;
  let ids: unknown;
  try {
    ids = JSON.parse(text);
  } catch {
    ids = undefined;
  }
  if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id))) {
    throw ApiError.validation('dashboards', 'dashboards must be a JSON array of dashboard ids, such as [1,2].');
  }
  return ids as number[];
}

/** PATCH and PUT: PostHog's PUT on insights requires no field, so both leave omitted fields as they are. */
async function updateHandler(req: RequestOf<'insights_partial_update'>): Promise<Schemas['Insight']> {
  const body = req.body ?? {};
  const { db } = req.server;
  const projectId = req.tenant.project_id;
  // Only a body setting `deleted` to false reaches a deleted insight, to restore it.
  const insight = await loadInsight(db, projectId, req.params.id, { includeDeleted: body.deleted === false });
  const viewer = viewerOf(req);
  const row = await changeInsight(db, projectId, viewer, insight, body);
  return presentInsight(db, row, { audience: viewer, mode: 'force_cache', cache: cacheContext(req) });
}

export const insightHandlers = {
  async insights_list(req, reply) {
    const q = req.query;
    const page = pageOf(q);
    const { db } = req.server;
    const { count, rows } = await listInsights(db, req.tenant.project_id, page, {
      saved: q.saved,
      favorited: q.favorited,
      shortId: q.short_id,
      search: q.search,
      createdBy: q.created_by,
      dashboards: dashboardIds(q.dashboards),
      tags: q.tags ? normalizeTags(q.tags) : undefined,
    });
    const items = await presentInsights(db, rows, {
      audience: viewerOf(req),
      mode: q.basic ? undefined : refreshMode(q.refresh),
      cache: cacheContext(req),
    });
    const texts = items.map((i) => JSON.stringify(i) as JsonText<Schemas['Insight']>);
    return sendJsonText(reply, jsonPage(req, page, count, texts));
  },

  async insights_create(req, reply) {
    const { db } = req.server;
    const viewer = viewerOf(req);
    const row = await createInsight(db, req.tenant.project_id, viewer, req.body ?? {});
    reply.code(201);
    return presentInsight(db, row, { audience: viewer, mode: 'force_cache', cache: cacheContext(req) });
  },

  async insights_retrieve(req) {
    const { db } = req.server;
    const row = await loadInsight(db, req.tenant.project_id, req.params.id);
    return presentInsight(db, row, {
      audience: viewerOf(req),
      mode: refreshMode(req.query.refresh),
      cache: cacheContext(req),
      dashboard: await dashboardContext(db, req.tenant.project_id, req.query),
    });
  },

  insights_partial_update: updateHandler,
  insights_update: updateHandler,

  async insights_destroy(_req, reply) {
    // PostHog's ForbidDestroyModel: refused before the insight is even looked up, with no body.
    return reply.code(405).send() as never;
  },
} satisfies SomeHandlers;
