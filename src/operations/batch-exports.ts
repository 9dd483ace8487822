import type { FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import { validateDestinationConfig, type DestinationType } from '../batch-exports/destination-config.js';
import {
  checkSecretNotRedirected,
  openDestinationSecrets,
  sealDestinationSecrets,
} from '../batch-exports/destination-secrets.js';
import { checkDestinationNetwork } from '../batch-exports/destination-network.js';
import { destinationTest, runTestStep, stepCount } from '../batch-exports/destination-tests.js';
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
import { parseFilterList } from '../events/filters.js';
import { ApiError } from '../core/errors.js';
import { tenantNetwork } from '../net/index.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeBatchExport, serializeLog } from '../serializers/batch-exports.js';
import { secretBox } from '../secrets/index.js';
import { twins, type TwinHandler } from './batch-export-twins.js';

type Schemas = components['schemas'];
type Patch = Schemas['PatchedBatchExportRequest'];

export function scopeOf(req: FastifyRequest): ExportScope {
  const { project_id, organization_id } = req.tenant;
  return project_id !== undefined ? { project_id } : { organization_id };
}

/** The export `id` within the caller's tenant, or a 404. */
export async function loadExport(req: FastifyRequest, id: string): Promise<BatchExportRow> {
  const exp = await getBatchExport(req.server.db, scopeOf(req), id);
  if (!exp) throw ApiError.notFound();
  return exp;
}

async function present(req: FastifyRequest, rows: BatchExportRow[]): Promise<Schemas['BatchExport'][]> {
  const runs = await latestRuns(
    req.server.db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => serializeBatchExport(r, runs.get(r.id) ?? []));
}

const presentOne = async (req: FastifyRequest, row: BatchExportRow) => (await present(req, [row]))[0]!;

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

interface Shape {
  model: string;
  destination_type: string;
  hogql_query: string | null;
  filters: unknown;
}

/** The rules that span fields, checked on the export as it will be after the write. */
function checkExport(e: Shape): void {
  if (e.destination_type === 'HTTP' && e.model !== 'events') {
    throw ApiError.validation(null, 'HTTP batch exports only support the events model');
  }
  if (e.hogql_query && e.model !== 'events') {
    throw ApiError.validation('hogql_query', 'A HogQL query can only be used with the events model');
  }
  if (e.hogql_query && e.destination_type === 'HTTP') {
    throw ApiError.validation(
      'hogql_query',
      'HTTP batch exports send events in the capture format and take no HogQL query',
    );
  }
  if (parseFilterList(e.filters, 'filters') && e.model !== 'events') {
    throw ApiError.validation('filters', 'Filters can only be used with the events model');
  }
}

const networkOf = (req: FastifyRequest) =>
  tenantNetwork(req.server.config.allowPrivateNetworks, req.server.database.url);

const date = (s: string | null | undefined) => (s === undefined ? undefined : s === null ? null : new Date(s));

/** A stored `filters` value: null for none, else the list as sent. */
const filtersOf = (f: unknown[] | null | undefined) => (f ? (f as Record<string, unknown>[]) : null);

async function targetProject(req: FastifyRequest, teamId: number | undefined): Promise<number> {
  if (req.tenant.project_id !== undefined) return req.tenant.project_id;
  if (teamId !== undefined) {
    if (!(await projectInOrganization(req.server.db, req.tenant.organization_id, teamId))) {
      throw ApiError.validation(
        'team_id',
        'Team does not exist on this organization, or it is private and you do not have access to it.',
      );
    }
    return teamId;
  }
  const oldest = await oldestProjectId(req.server.db, req.tenant.organization_id);
  if (oldest === undefined) throw ApiError.validation('team_id', 'This organization has no project to export from.');
  return oldest;
}

/** PATCH and PUT: the given fields change, the destination config merges into the stored one. */
async function applyUpdate(req: FastifyRequest, exp: BatchExportRow, body: Patch): Promise<Schemas['BatchExport']> {
  const values: Partial<BatchExportInsert> = {};
  if (body.name !== undefined) values.name = body.name;
  if (body.model !== undefined) values.model = body.model;
  if (body.interval !== undefined) values.interval = body.interval;
  if (body.start_at !== undefined) values.start_at = date(body.start_at);
  if (body.end_at !== undefined) values.end_at = date(body.end_at);
  if (body.last_paused_at !== undefined) values.last_paused_at = date(body.last_paused_at);
  if (body.filters !== undefined) values.filters = filtersOf(body.filters);
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
    filters: values.filters !== undefined ? values.filters : exp.filters,
  });
  if (body.paused === true && !exp.paused) Object.assign(values, { paused: true, last_paused_at: new Date() });
  if (body.paused === false && exp.paused) Object.assign(values, { paused: false, schedule_from: new Date() });
  const row = Object.keys(values).length ? await updateBatchExport(req.server.db, scopeOf(req), exp.id, values) : exp;
  return presentOne(req, row ?? exp);
}

const list: TwinHandler<'projects_batch_exports_list'> = async (req) => {
  const page = pageOf(req.query);
  const { count, rows } = await listBatchExports(req.server.db, scopeOf(req), page);
  return paginated(req, page, count, await present(req, rows));
};

const create: TwinHandler<'projects_batch_exports_create'> = async (req, reply) => {
  const body = req.body;
  const type = body.destination.type as DestinationType;
  const config = body.destination.config ?? {};
  validateDestinationConfig(type, config);
  await checkDestinationNetwork(type, config, networkOf(req));
  const hogql = body.hogql_query || null;
  const model = body.model ?? 'events';
  const filters = filtersOf(body.filters);
  checkExport({ model, destination_type: type, hogql_query: hogql, filters });
  const schema = hogql ? compileHogQL(hogql) : null;
  const values: BatchExportInsert = {
    project_id: await targetProject(req, body.team_id),
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
    filters,
  };
  const row = await insertBatchExport(req.server.db, values);
  reply.code(201);
  return serializeBatchExport(row, []);
};

const retrieve: TwinHandler<'projects_batch_exports_retrieve'> = async (req) =>
  presentOne(req, await loadExport(req, req.params.id));

const partialUpdate: TwinHandler<'projects_batch_exports_partial_update'> = async (req) =>
  applyUpdate(req, await loadExport(req, req.params.id), req.body ?? {});

const update: TwinHandler<'projects_batch_exports_update'> = async (req) =>
  applyUpdate(req, await loadExport(req, req.params.id), req.body);

const destroy: TwinHandler<'projects_batch_exports_destroy'> = async (req, reply) => {
  if (!(await deleteExport(req.server.db, scopeOf(req), await loadExport(req, req.params.id))))
    throw ApiError.notFound();
  reply.code(204);
};

const backfill: TwinHandler<'projects_batch_exports_backfill_create'> = async (req) => {
  const exp = await loadExport(req, req.params.id);
  const body = req.body ?? {};
  return {
    backfill_id: await createBackfill(req.server.db, scopeOf(req), req.server.jobs, exp, body.start_at, body.end_at),
  };
};

const pause: TwinHandler<'projects_batch_exports_pause_create'> = async (req) => {
  const exp = await loadExport(req, req.params.id);
  if (!exp.paused) await pauseExport(req.server.db, scopeOf(req), exp);
  return { paused: true };
};

const unpause: TwinHandler<'projects_batch_exports_unpause_create'> = async (req) => {
  const exp = await loadExport(req, req.params.id);
  if (exp.paused) await unpauseExport(req.server.db, scopeOf(req), req.server.jobs, exp, req.body?.backfill === true);
  return { paused: false };
};

type LogQuery = {
  limit?: number;
  offset?: number;
  level?: string[];
  search?: string;
  after?: string;
  before?: string;
  instance_id?: string;
};

/** A page of the export's log entries; `runId` narrows it to one run's. */
export async function logPage(req: FastifyRequest, exp: BatchExportRow, q: LogQuery, runId?: string) {
  const page = { limit: q.limit ?? 50, offset: q.offset && q.offset > 0 ? q.offset : 0 };
  const levels = (q.level ?? [])
    .flatMap((l) => l.split(','))
    .map((l) => l.trim())
    .filter(Boolean);
  const instance = runId ?? q.instance_id;
  const { count, rows } = await listLogs(
    req.server.db,
    exp.id,
    {
      levels,
      ...(q.search ? { search: q.search } : {}),
      ...(q.after ? { after: new Date(q.after) } : {}),
      ...(q.before ? { before: new Date(q.before) } : {}),
      ...(instance ? { instance_id: instance } : {}),
    },
    page,
  );
  return paginated(req, page, count, rows.map(serializeLog));
}

const logs: TwinHandler<'projects_batch_exports_logs_retrieve'> = async (req) =>
  logPage(req, await loadExport(req, req.params.id), req.query);

const test: TwinHandler<'projects_batch_exports_test_retrieve'> = async (req) => {
  const type = req.query.destination;
  if (!type) throw ApiError.validation('destination', 'This field is required.', 'required');
  const described = destinationTest(type);
  if (!described) throw ApiError.notFound();
  return described;
};

function checkStep(type: string, step: number | undefined): number {
  const index = step ?? 0;
  const count = stepCount(type);
  if (!count) throw ApiError.validation('destination__type', `Destination ${type} has no test.`);
  if (index >= count)
    throw ApiError.validation('step', `Step ${index} does not exist; destination ${type} has ${count} test steps.`);
  return index;
}

/** The stored export's destination with the body's changes laid over, secrets in clear, for a test step. */
const runTestStepOnExport: TwinHandler<'projects_batch_exports_run_test_step_create'> = async (req) => {
  const exp = await loadExport(req, req.params.id);
  const body = req.body ?? {};
  const type = (body.destination?.type ?? exp.destination_type) as DestinationType;
  const index = checkStep(type, body.step);
  const patch = body.destination?.config ?? {};
  const stored = type === exp.destination_type ? exp.destination_config : {};
  const config = merge(stored, patch);
  validateDestinationConfig(type, config);
  const network = networkOf(req);
  await checkDestinationNetwork(type, config, network);
  if (type === exp.destination_type) checkSecretNotRedirected(type, exp.destination_config, patch, config);
  const clear = merge(openDestinationSecrets(secretBox(req.server.config), type, stored), patch);
  // The table the export writes to when the config names none (its model's name), as the writer does.
  if (type === 'Postgres' && !clear.table_name) clear.table_name = exp.model;
  return runTestStep(type, index, clear, network);
};

const runTestStepNew: TwinHandler<'projects_batch_exports_run_test_step_new_create'> = async (req) => {
  const { destination, step } = req.body;
  const type = destination.type as DestinationType;
  const config = destination.config ?? {};
  validateDestinationConfig(type, config);
  const index = checkStep(type, step);
  const network = networkOf(req);
  await checkDestinationNetwork(type, config, network);
  return runTestStep(type, index, config, network);
};

export const batchExportHandlers = {
  ...twins('projects_batch_exports_list', 'batch_exports_list', list),
  ...twins('projects_batch_exports_create', 'batch_exports_create', create),
  ...twins('projects_batch_exports_retrieve', 'batch_exports_retrieve', retrieve),
  ...twins('projects_batch_exports_partial_update', 'batch_exports_partial_update', partialUpdate),
  ...twins('projects_batch_exports_update', 'batch_exports_update', update),
  ...twins('projects_batch_exports_destroy', 'batch_exports_destroy', destroy),
  ...twins('projects_batch_exports_backfill_create', 'batch_exports_backfill_create', backfill),
  ...twins('projects_batch_exports_pause_create', 'batch_exports_pause_create', pause),
  ...twins('projects_batch_exports_unpause_create', 'batch_exports_unpause_create', unpause),
  ...twins('projects_batch_exports_logs_retrieve', 'batch_exports_logs_retrieve', logs),
  ...twins('projects_batch_exports_test_retrieve', 'batch_exports_test_retrieve', test),
  ...twins('projects_batch_exports_run_test_step_create', 'batch_exports_run_test_step_create', runTestStepOnExport),
  ...twins('projects_batch_exports_run_test_step_new_create', 'batch_exports_run_test_step_new_create', runTestStepNew),
} satisfies SomeHandlers;
