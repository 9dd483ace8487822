import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import { validateDestinationConfig, type DestinationType } from '../batch-exports/destination-config.js';
import { checkSecretNotRedirected, sealDestinationSecrets } from '../batch-exports/destination-secrets.js';
import { checkDestinationNetwork } from '../batch-exports/destination-network.js';
import { compileHogQL, createBackfill, deleteExport, pauseExport, unpauseExport } from '../batch-exports/service.js';
import {
  getBatchExport,
  insertBatchExport,
  latestRuns,
  listBatchExports,
  oldestProjectId,
  projectInOrganization,
  updateBatchExport,
  type BatchExportInsert,
  type BatchExportRow,
  type ExportScope,
} from '../db/queries/batch-exports.js';
import { listLogs } from '../db/queries/batch-export-lists.js';
import { ApiError } from '../http/errors.js';
import { tenantNetwork } from '../net/index.js';
import { pageOf, paginated } from '../http/pagination.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeBatchExport, serializeLog } from '../serializers/batch-exports.js';
import { secretBox } from '../secrets/index.js';

type Schemas = components['schemas'];
type Req = FastifyRequest<any>;
type Body = Partial<Schemas['BatchExportRequest']>;

export function scopeOf(req: FastifyRequest): ExportScope {
  const { project_id, organization_id } = req.tenant;
  return project_id !== undefined ? { project_id } : { organization_id };
}

/** The export named by the path (`id`, or `batch_export_id` on nested routes) within the caller's tenant. */
export async function loadExport(req: Req): Promise<BatchExportRow> {
  const params = req.params as { id?: string; batch_export_id?: string };
  const exp = await getBatchExport(req.server.db, scopeOf(req), params.batch_export_id ?? params.id ?? '');
  if (!exp) throw ApiError.notFound();
  return exp;
}

async function present(req: Req, rows: BatchExportRow[]): Promise<Schemas['BatchExport'][]> {
  const runs = await latestRuns(req.server.db, rows.map((r) => r.id));
  return rows.map((r) => serializeBatchExport(r, runs.get(r.id) ?? []));
}

/** PostHog's recursive_dict_merge: nested objects merge, anything else is replaced. */
function merge(old: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...old };
  for (const [k, v] of Object.entries(patch)) {
    const prev = old[k];
    const isObj = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
    out[k] = isObj(v) && isObj(prev) ? merge(prev as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

/** The rules that span fields, checked on the export as it will be after the write. */
function checkExport(e: { model: string; destination_type: string; hogql_query: string | null }): void {
  if (e.destination_type === 'HTTP' && e.model !== 'events') {
    throw ApiError.validation(null, 'HTTP batch exports only support the events model');
  }
  if (e.hogql_query && e.model !== 'events') {
    throw ApiError.validation('hogql_query', 'A HogQL query can only be used with the events model');
  }
  if (e.hogql_query && e.destination_type === 'HTTP') {
    throw ApiError.validation('hogql_query', 'HTTP batch exports send events in the capture format and take no HogQL query');
  }
}

const networkOf = (req: Req) => tenantNetwork(req.server.config.allowPrivateNetworks, req.server.database.url);

const date = (s: string | null | undefined) => (s === undefined ? undefined : s === null ? null : new Date(s));

async function targetProject(req: Req, body: Body): Promise<number> {
  if (req.tenant.project_id !== undefined) return req.tenant.project_id;
  if (body.team_id !== undefined) {
    if (!(await projectInOrganization(req.server.db, req.tenant.organization_id, body.team_id))) {
      throw ApiError.validation('team_id', 'Team does not exist on this organization, or it is private and you do not have access to it.');
    }
    return body.team_id;
  }
  const oldest = await oldestProjectId(req.server.db, req.tenant.organization_id);
  if (oldest === undefined) throw ApiError.validation('team_id', 'This organization has no project to export from.');
  return oldest;
}

const impl = {
  async list(req: Req) {
    const page = pageOf(req.query as { limit?: number; offset?: number });
    const { count, rows } = await listBatchExports(req.server.db, scopeOf(req), page);
    return paginated(req, page, count, await present(req, rows));
  },

  async create(req: Req, reply: FastifyReply) {
    const body = req.body as Schemas['BatchExportRequest'];
    const type = body.destination.type as DestinationType;
    const config = body.destination.config ?? {};
    validateDestinationConfig(type, config);
    await checkDestinationNetwork(type, config, networkOf(req));
    const hogql = body.hogql_query || null;
    const model = body.model ?? 'events';
    checkExport({ model, destination_type: type, hogql_query: hogql });
    const schema = hogql ? compileHogQL(hogql) : null;
    const values: BatchExportInsert = {
      project_id: await targetProject(req, body),
      name: body.name,
      model,
      destination_type: type,
      destination_config: sealDestinationSecrets(secretBox(req.server.config), type, config, config),
      interval: body.interval,
      paused: body.paused ?? false,
      last_paused_at: date(body.last_paused_at) ?? (body.paused ? new Date() : null),
      start_at: date(body.start_at) ?? null,
      end_at: date(body.end_at) ?? null,
      hogql_query: hogql,
      schema,
    };
    const row = await insertBatchExport(req.server.db, values);
    reply.code(201);
    return serializeBatchExport(row, []);
  },

  async retrieve(req: Req) {
    return (await present(req, [await loadExport(req)]))[0]!;
  },

  async update(req: Req) {
    const exp = await loadExport(req);
    const body = (req.body ?? {}) as Schemas['PatchedBatchExportRequest'];
    const values: Partial<BatchExportInsert> = {};
    if (body.name !== undefined) values.name = body.name;
    if (body.model !== undefined) values.model = body.model;
    if (body.interval !== undefined) values.interval = body.interval;
    if (body.start_at !== undefined) values.start_at = date(body.start_at);
    if (body.end_at !== undefined) values.end_at = date(body.end_at);
    if (body.last_paused_at !== undefined) values.last_paused_at = date(body.last_paused_at);
    if (body.destination) {
      const type = (body.destination.type ?? exp.destination_type) as DestinationType;
      // A new type starts from its own config; the same type merges, so secrets may be left out.
      const patch = body.destination.config ?? {};
      const config = type === exp.destination_type ? merge(exp.destination_config, patch) : patch;
      validateDestinationConfig(type, config);
      // Where it may point comes first: a refused address is refused whatever secrets come with it.
      await checkDestinationNetwork(type, config, networkOf(req));
      if (type === exp.destination_type) checkSecretNotRedirected(type, exp.destination_config, patch, config);
      values.destination_type = type;
      values.destination_config = sealDestinationSecrets(secretBox(req.server.config), type, config, patch);
    }
    if (body.hogql_query !== undefined) {
      values.hogql_query = body.hogql_query || null;
      values.schema = values.hogql_query ? compileHogQL(values.hogql_query) : null;
    }
    checkExport({
      model: values.model ?? exp.model,
      destination_type: values.destination_type ?? exp.destination_type,
      hogql_query: values.hogql_query !== undefined ? values.hogql_query : exp.hogql_query,
    });
    if (body.paused === true && !exp.paused) Object.assign(values, { paused: true, last_paused_at: new Date() });
    if (body.paused === false && exp.paused) Object.assign(values, { paused: false, schedule_from: new Date() });
    const row = Object.keys(values).length ? await updateBatchExport(req.server.db, exp.id, values) : exp;
    return (await present(req, [row ?? exp]))[0]!;
  },

  async destroy(req: Req, reply: FastifyReply) {
    await deleteExport(req.server.db, await loadExport(req));
    reply.code(204);
  },

  async backfill(req: Req) {
    const exp = await loadExport(req);
    const body = (req.body ?? {}) as Schemas['BatchExportBackfillRequest'];
    return { backfill_id: await createBackfill(req.server.db, req.server.jobs, exp, body.start_at, body.end_at) };
  },

  async pause(req: Req) {
    const exp = await loadExport(req);
    if (!exp.paused) await pauseExport(req.server.db, exp);
    return { paused: true };
  },

  async unpause(req: Req) {
    const exp = await loadExport(req);
    const body = (req.body ?? {}) as Schemas['BatchExportUnpauseRequest'];
    if (exp.paused) await unpauseExport(req.server.db, req.server.jobs, exp, body.backfill === true);
    return { paused: false };
  },

  async logs(req: Req) {
    const exp = await loadExport(req);
    const q = req.query as { limit?: number; offset?: number; level?: string[]; search?: string; after?: string; before?: string; instance_id?: string };
    const page = { limit: q.limit ?? 50, offset: q.offset && q.offset > 0 ? q.offset : 0 };
    const levels = (q.level ?? []).flatMap((l) => l.split(',')).map((l) => l.trim()).filter(Boolean);
    const { count, rows } = await listLogs(
      req.server.db,
      exp.id,
      {
        levels,
        ...(q.search ? { search: q.search } : {}),
        ...(q.after ? { after: new Date(q.after) } : {}),
        ...(q.before ? { before: new Date(q.before) } : {}),
        ...(q.instance_id ? { instance_id: q.instance_id } : {}),
      },
      page,
    );
    return paginated(req, page, count, rows.map(serializeLog));
  },
};

export const batchExportHandlers = {
  batch_exports_list: impl.list,
  batch_exports_create: impl.create,
  batch_exports_retrieve: impl.retrieve,
  batch_exports_partial_update: impl.update,
  batch_exports_destroy: impl.destroy,
  batch_exports_backfill_create: impl.backfill,
  batch_exports_pause_create: impl.pause,
  batch_exports_unpause_create: impl.unpause,
  batch_exports_logs_retrieve: impl.logs,
  projects_batch_exports_list: impl.list,
  projects_batch_exports_create: impl.create,
  projects_batch_exports_retrieve: impl.retrieve,
  projects_batch_exports_partial_update: impl.update,
  projects_batch_exports_destroy: impl.destroy,
  projects_batch_exports_backfill_create: impl.backfill,
  projects_batch_exports_pause_create: impl.pause,
  projects_batch_exports_unpause_create: impl.unpause,
  projects_batch_exports_logs_retrieve: impl.logs,
} satisfies SomeHandlers;

