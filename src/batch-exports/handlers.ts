import type { FastifyRequest } from 'fastify';
import { destinationTest } from './destination-tests.js';
import { exportLogs, exportScope, loadExport, presentExport, presentExports } from './load.js';
import { createBackfill, deleteExport, pauseExport, unpauseExport } from './service.js';
import { createExport, testStepNew, testStepOnExport, updateExport, type ExportDeps } from './writes.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';
import { listBatchExports } from './queries.js';
import { paginated } from '../http/pagination.js';
import type { SomeHandlers } from '../http/types.js';
import { tenantNetwork } from '../net/index.js';
import { secretBox } from '../secrets/index.js';
import { serializeBatchExport } from './serialize.js';
import { twins, type TwinHandler } from './twin-handlers.js';

const networkOf = (req: FastifyRequest) =>
  tenantNetwork(req.server.config.allowPrivateNetworks, req.server.database.url);

const depsOf = (req: FastifyRequest): ExportDeps => ({ box: secretBox(req.server.config), network: networkOf(req) });

/** The export the path names within the caller's tenant, or a 404. */
const pathExport = (req: FastifyRequest<{ Params: { id: string } }>) =>
  loadExport(req.server.db, exportScope(req.tenant), req.params.id);

const list: TwinHandler<'projects_batch_exports_list'> = async (req) => {
  const page = pageOf(req.query);
  const { count, rows } = await listBatchExports(req.server.db, exportScope(req.tenant), page);
  return paginated(req, page, count, await presentExports(req.server.db, rows));
};

const create: TwinHandler<'projects_batch_exports_create'> = async (req, reply) => {
  const row = await createExport(req.server.db, req.tenant, depsOf(req), req.body);
  reply.code(201);
  return serializeBatchExport(row, []);
};

const retrieve: TwinHandler<'projects_batch_exports_retrieve'> = async (req) =>
  presentExport(req.server.db, await pathExport(req));

const partialUpdate: TwinHandler<'projects_batch_exports_partial_update'> = async (req) => {
  const exp = await pathExport(req);
  const row = await updateExport(req.server.db, exportScope(req.tenant), depsOf(req), exp, req.body ?? {});
  return presentExport(req.server.db, row);
};

const update: TwinHandler<'projects_batch_exports_update'> = async (req) => {
  const exp = await pathExport(req);
  const row = await updateExport(req.server.db, exportScope(req.tenant), depsOf(req), exp, req.body);
  return presentExport(req.server.db, row);
};

const destroy: TwinHandler<'projects_batch_exports_destroy'> = async (req, reply) => {
  if (!(await deleteExport(req.server.db, exportScope(req.tenant), await pathExport(req)))) throw ApiError.notFound();
  reply.code(204);
};

const backfill: TwinHandler<'projects_batch_exports_backfill_create'> = async (req) => {
  const exp = await pathExport(req);
  const body = req.body ?? {};
  const scope = exportScope(req.tenant);
  return { backfill_id: await createBackfill(req.server.db, scope, req.server.jobs, exp, body.start_at, body.end_at) };
};

const pause: TwinHandler<'projects_batch_exports_pause_create'> = async (req) => {
  const exp = await pathExport(req);
  if (!exp.paused) await pauseExport(req.server.db, exportScope(req.tenant), exp);
  return { paused: true };
};

const unpause: TwinHandler<'projects_batch_exports_unpause_create'> = async (req) => {
  const exp = await pathExport(req);
  if (exp.paused) {
    await unpauseExport(req.server.db, exportScope(req.tenant), req.server.jobs, exp, req.body?.backfill === true);
  }
  return { paused: false };
};

const logs: TwinHandler<'projects_batch_exports_logs_retrieve'> = async (req) => {
  const { page, count, results } = await exportLogs(req.server.db, await pathExport(req), req.query);
  return paginated(req, page, count, results);
};

const test: TwinHandler<'projects_batch_exports_test_retrieve'> = async (req) => {
  const type = req.query.destination;
  if (!type) throw ApiError.validation('destination', 'This field is required.', 'required');
  const described = destinationTest(type);
  if (!described) throw ApiError.notFound();
  return described;
};

const runTestStepOnExport: TwinHandler<'projects_batch_exports_run_test_step_create'> = async (req) =>
  testStepOnExport(depsOf(req), await pathExport(req), req.body ?? {});

const runTestStepNew: TwinHandler<'projects_batch_exports_run_test_step_new_create'> = async (req) =>
  testStepNew(networkOf(req), req.body);

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
