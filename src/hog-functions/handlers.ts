import type { FastifyInstance } from 'fastify';
import { ApiError } from '../core/errors.js';
import { djangoDateTime } from '../core/dates.js';
import { isRowId } from '../core/ids.js';
import { searchTerms } from '../core/search-terms.js';
import { clampLimit, pageOf } from '../core/paging.js';
import { paginated } from '../http/pagination.js';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { networkPolicy } from '../net/index.js';
import { secretBox } from '../secrets/index.js';
import { invoke } from './invocations.js';
import { loadHogFunction } from './load.js';
import { metricsSeries, metricsTotals } from './metrics.js';
import { listHogFunctions } from './queries.js';
import { rearrange } from './rearrange.js';
import { listReplays, startReplay } from './replay.js';
import { changeHogFunction, createHogFunction, testAccounts, type HogFunctionBody } from './save.js';
import { serializeHogFunction, serializeHogFunctionMinimal } from './serialize.js';
import { readLogs } from './telemetry.js';
import { TEMPLATES, templateById } from './templates/index.js';
import { deliveryRetryDelay } from './settings.js';

const commaList = (...values: (string | string[] | undefined)[]) =>
  values
    .flat()
    .flatMap((v) => (v ? v.split(',') : []))
    .map((s) => s.trim())
    .filter(Boolean);

/** A date-time filter as django-filter reads it: what Django's field refuses is its 400 on the parameter. */
function exactTime(attr: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  const instant = djangoDateTime(value);
  if (!instant) throw ApiError.validation(attr, 'Enter a valid date/time.', 'invalid');
  return instant;
}

const pathFunction = (req: ProjectRequest & { params: { id: string } }, withDeleted = false) =>
  loadHogFunction(req.server.db, req.tenant, req.params.id, withDeleted);

async function update(req: ProjectRequest & { params: { id: string }; body?: HogFunctionBody }) {
  const body = req.body ?? {};
  // Only a body restoring a deleted function reaches it (PostHog's safely_get_queryset).
  const current = await pathFunction(req, body.deleted === false);
  const box = secretBox(req.server.config);
  return serializeHogFunction(await changeHogFunction(req.server.db, box, req.tenant, current, body));
}

const policyOf = (app: FastifyInstance) => networkPolicy(app.config.allowPrivateNetworks);

export const hogFunctionHandlers = {
  async hog_functions_list(req) {
    const page = pageOf(req.query);
    const q = req.query ?? {};
    const { count, rows } = await listHogFunctions(
      req.server.db,
      req.tenant.project_id,
      {
        types: commaList(q.type, q.types),
        ...(q.enabled !== undefined ? { enabled: q.enabled } : {}),
        id: q.id?.toLowerCase().replace(/^urn:uuid:/, ''),
        // An id no row can have (past int4) names no user, so none made a function: nothing matches.
        createdBy: q.created_by === undefined ? undefined : isRowId(q.created_by) ? q.created_by : -1,
        createdAt: exactTime('created_at', q.created_at),
        updatedAt: exactTime('updated_at', q.updated_at),
        searchTerms: searchTerms(q.search ?? ''),
      },
      page,
    );
    return paginated(req, page, count, rows.map(serializeHogFunctionMinimal));
  },

  async hog_functions_create(req, reply) {
    const box = secretBox(req.server.config);
    const view = await createHogFunction(req.server.db, box, req.tenant, req.principal.user.id, req.body);
    reply.code(201);
    return serializeHogFunction(view);
  },

  async hog_functions_retrieve(req) {
    return serializeHogFunction(await pathFunction(req));
  },

  hog_functions_partial_update: update,
  hog_functions_update: update,

  async hog_functions_destroy(_req, reply) {
    // PostHog's ForbidDestroyModel: refused with no body, before any lookup.
    return reply.code(405).send() as never;
  },

  async hog_functions_rearrange_partial_update(req) {
    const rows = await rearrange(req.server.db, req.tenant, req.body.orders);
    return rows.map(serializeHogFunction);
  },

  async hog_functions_invocations_create(req) {
    const stored = req.params.id === 'new' ? undefined : (await pathFunction(req)).fn;
    const box = secretBox(req.server.config);
    const { db } = req.server;
    return invoke(box, policyOf(req.server), stored, req.body, (f) => testAccounts(db, req.tenant.project_id, f));
  },

  async hog_functions_logs_retrieve(req) {
    const { fn } = await pathFunction(req);
    const q = req.query ?? {};
    const rows = await readLogs(req.server.db, req.tenant.project_id, fn.id, {
      limit: clampLimit(q.limit, 50),
      after: q.after,
      before: q.before,
      instance_id: q.instance_id,
      levels: commaList(q.level).map((l) => l.toUpperCase()),
      search: q.search,
    });
    return {
      results: rows.map((r) => ({
        log_source_id: fn.id,
        instance_id: r.instance_id,
        timestamp: r.timestamp.toISOString(),
        level: r.level as 'INFO',
        message: r.message,
      })),
    };
  },

  async hog_functions_metrics_retrieve(req) {
    const { fn } = await pathFunction(req);
    return metricsSeries(req.server.db, fn.id, req.query ?? {});
  },

  async hog_functions_metrics_totals_retrieve(req) {
    const { fn } = await pathFunction(req);
    return metricsTotals(req.server.db, fn.id, req.query ?? {});
  },

  async hog_functions_replay_create(req, reply) {
    const { fn } = await pathFunction(req);
    const boss = await req.server.jobs.boss();
    const replay = await startReplay(
      req.server.db,
      boss,
      deliveryRetryDelay(req.server.config),
      fn,
      new Date(req.body.date_from),
      new Date(req.body.date_to),
    );
    reply.code(201);
    return replay;
  },

  async hog_functions_replay_list(req) {
    const { fn } = await pathFunction(req);
    return listReplays(req.server.db, fn);
  },

  async hog_function_templates_list(req) {
    const page = pageOf(req.query);
    const types = commaList(req.query?.type, req.query?.types);
    const all = TEMPLATES.filter((t) => !types.length || types.includes(t.type));
    return paginated(req, page, all.length, all.slice(page.offset, page.offset + page.limit));
  },

  async hog_function_templates_retrieve(req) {
    const found = templateById(req.params.template_id);
    if (!found) throw ApiError.notFound();
    return found;
  },
} satisfies SomeHandlers;
