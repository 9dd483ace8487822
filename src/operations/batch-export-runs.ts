import type { FastifyRequest } from 'fastify';
import { createBackfill, retryRun } from '../batch-exports/service.js';
import { isUuid } from '../core/ids.js';
import { decodeCursor, encodeCursor } from '../core/cursor.js';
import { clampLimit } from '../core/paging.js';
import {
  backfillRunCounts,
  cancelRuns,
  getBackfill,
  getRun,
  setBackfillStatus,
  settleBackfill,
  type BackfillRow,
} from '../db/queries/batch-export-runs.js';
import { listBackfills, listRuns, type Cursor, type CursorPage } from '../db/queries/batch-export-lists.js';
import type { Db } from '../db/client.js';
import { ApiError } from '../core/errors.js';
import { requestUrl } from '../http/pagination.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeBackfill, serializeRun } from '../serializers/batch-exports.js';
import { loadExport, logPage, scopeOf } from './batch-exports.js';
import { twins, type TwinHandler } from './batch-export-twins.js';

function cursorOf(raw: string | undefined): Cursor | undefined {
  if (!raw) return undefined;
  const c = decodeCursor(raw) as Partial<Cursor> | null | undefined;
  if (typeof c?.v === 'string' && typeof c.id === 'string' && isUuid(c.id) && !Number.isNaN(Date.parse(c.v))) {
    return c as Cursor;
  }
  // DRF's answer for a cursor it cannot read.
  throw ApiError.notFound('Invalid cursor');
}

function cursorPage<T, R>(req: FastifyRequest, page: CursorPage<T>, map: (row: T) => R) {
  const link = (c: Cursor | null) => {
    if (!c) return null;
    const u = requestUrl(req);
    u.searchParams.set('cursor', encodeCursor(c));
    return u.toString();
  };
  return { next: link(page.next), previous: link(page.previous), results: page.rows.map(map) };
}

const RELATIVE = /^-(\d+)([hdwmy])$/;

/** PostHog's relative_date_parse for the forms clients send: `-7d`, `-24h`, `-2w`, `-1m`, `-1y`, or ISO. */
function parseDate(value: string | undefined, fallback: Date, attr: string): Date {
  if (!value) return fallback;
  const m = RELATIVE.exec(value);
  if (m) {
    const n = Number(m[1]);
    const d = new Date();
    if (m[2] === 'h') d.setUTCHours(d.getUTCHours() - n);
    if (m[2] === 'd') d.setUTCDate(d.getUTCDate() - n);
    if (m[2] === 'w') d.setUTCDate(d.getUTCDate() - 7 * n);
    if (m[2] === 'm') d.setUTCMonth(d.getUTCMonth() - n);
    if (m[2] === 'y') d.setUTCFullYear(d.getUTCFullYear() - n);
    return d;
  }
  const d = new Date(value);
  if (Number.isNaN(d.getTime()))
    throw ApiError.validation(attr, 'Datetime has wrong format. Use ISO 8601 or a relative date such as -7d.');
  return d;
}

type Nested = { batch_export_id: string; id: string };

async function loadRun(req: FastifyRequest, params: Nested) {
  const exp = await loadExport(req, params.batch_export_id);
  const run = isUuid(params.id) ? await getRun(req.server.db, exp.id, params.id) : undefined;
  if (!run) throw ApiError.notFound();
  return { exp, run };
}

async function loadBackfill(req: FastifyRequest, params: Nested) {
  const exp = await loadExport(req, params.batch_export_id);
  const backfill = isUuid(params.id) ? await getBackfill(req.server.db, exp.id, params.id) : undefined;
  if (!backfill) throw ApiError.notFound();
  return { exp, backfill };
}

async function presentBackfills(req: FastifyRequest, rows: BackfillRow[]) {
  const counts = await backfillRunCounts(
    req.server.db,
    rows.map((b) => b.id),
  );
  return rows.map((b) => serializeBackfill(b, counts.get(b.id) ?? {}));
}

const runsList: TwinHandler<'projects_batch_exports_runs_list'> = async (req) => {
  const exp = await loadExport(req, req.params.batch_export_id);
  const q = req.query;
  const ordering = q.ordering ?? '-created_at';
  const byInterval = ordering.endsWith('data_interval_start');
  const weekAgo = new Date(Date.now() - 7 * 86_400_000);
  const page = await listRuns(
    req.server.db,
    exp.id,
    {
      orderBy: byInterval ? 'data_interval_start' : 'created_at',
      descending: ordering.startsWith('-'),
      from: byInterval ? parseDate(q.start, weekAgo, 'start') : parseDate(q.after, weekAgo, 'after'),
      to: byInterval ? parseDate(q.end, new Date(), 'end') : parseDate(q.before, new Date(), 'before'),
    },
    cursorOf(q.cursor),
    clampLimit(q.limit, 100),
  );
  return cursorPage(req, page, serializeRun);
};

const runsRetrieve: TwinHandler<'projects_batch_exports_runs_retrieve'> = async (req) =>
  serializeRun((await loadRun(req, req.params)).run);

const runsRetry: TwinHandler<'projects_batch_exports_runs_retry_create'> = async (req) => {
  const { exp, run } = await loadRun(req, req.params);
  return { backfill_id: await retryRun(req.server.db, scopeOf(req), req.server.jobs, exp, run) };
};

const runsCancel: TwinHandler<'projects_batch_exports_runs_cancel_create'> = async (req) => {
  const { run } = await loadRun(req, req.params);
  if (run.status !== 'Running' && run.status !== 'Starting') {
    throw ApiError.validation(null, `Cannot cancel a run that is in '${run.status}' status`);
  }
  const scope = scopeOf(req);
  // One transaction: a failed answer leaves neither the run cancelled nor its backfill settled.
  await req.server.db.transaction(async (tx) => {
    await cancelRuns(tx as Db, scope, { exportId: run.batch_export_id, runId: run.id });
    if (run.backfill_id) await settleBackfill(tx as Db, scope, run.backfill_id);
  });
  return { cancelled: true };
};

/** PostHog's LogEntryMixin on a run: the export's entries of this run (its `instance_id`). */
const runsLogs: TwinHandler<'projects_batch_exports_runs_logs_retrieve'> = async (req) => {
  const { exp, run } = await loadRun(req, req.params);
  return logPage(req, exp, req.query, run.id);
};

const backfillsList: TwinHandler<'projects_batch_exports_backfills_list'> = async (req) => {
  const exp = await loadExport(req, req.params.batch_export_id);
  const q = req.query;
  const ordering = q.ordering ?? '-created_at';
  const page = await listBackfills(
    req.server.db,
    exp.id,
    ordering.endsWith('start_at') ? 'start_at' : 'created_at',
    ordering.startsWith('-'),
    cursorOf(q.cursor),
    clampLimit(q.limit, 50),
  );
  const results = await presentBackfills(req, page.rows);
  const byId = new Map(results.map((r) => [r.id, r]));
  return cursorPage(req, page, (b) => byId.get(b.id)!);
};

const backfillsCreate: TwinHandler<'projects_batch_exports_backfills_create'> = async (req, reply) => {
  const exp = await loadExport(req, req.params.batch_export_id);
  const body = req.body ?? {};
  const id = await createBackfill(req.server.db, scopeOf(req), req.server.jobs, exp, body.start_at, body.end_at);
  const row = await getBackfill(req.server.db, exp.id, id);
  if (!row) throw new Error(`Backfill ${id} vanished after its creation`);
  reply.code(201);
  return { ...(await presentBackfills(req, [row]))[0]!, backfill_id: id };
};

const backfillsRetrieve: TwinHandler<'projects_batch_exports_backfills_retrieve'> = async (req) => {
  const { backfill } = await loadBackfill(req, req.params);
  return (await presentBackfills(req, [backfill]))[0]!;
};

const backfillsCancel: TwinHandler<'projects_batch_exports_backfills_cancel_create'> = async (req) => {
  const { backfill } = await loadBackfill(req, req.params);
  if (backfill.status !== 'Running' && backfill.status !== 'Starting') {
    throw ApiError.validation(null, `Cannot cancel a backfill that is in '${backfill.status}' status`);
  }
  const scope = scopeOf(req);
  await req.server.db.transaction(async (tx) => {
    await setBackfillStatus(tx as Db, scope, backfill.id, 'Cancelled');
    await cancelRuns(tx as Db, scope, { exportId: backfill.batch_export_id, backfillId: backfill.id });
  });
  return { cancelled: true };
};

export const batchExportRunHandlers = {
  ...twins('projects_batch_exports_runs_list', 'batch_exports_runs_list', runsList),
  ...twins('projects_batch_exports_runs_retrieve', 'batch_exports_runs_retrieve', runsRetrieve),
  ...twins('projects_batch_exports_runs_retry_create', 'batch_exports_runs_retry_create', runsRetry),
  ...twins('projects_batch_exports_runs_cancel_create', 'batch_exports_runs_cancel_create', runsCancel),
  ...twins('projects_batch_exports_runs_logs_retrieve', 'batch_exports_runs_logs_retrieve', runsLogs),
  ...twins('projects_batch_exports_backfills_list', 'batch_exports_backfills_list', backfillsList),
  ...twins('projects_batch_exports_backfills_create', 'batch_exports_backfills_create', backfillsCreate),
  ...twins('projects_batch_exports_backfills_retrieve', 'batch_exports_backfills_retrieve', backfillsRetrieve),
  ...twins('projects_batch_exports_backfills_cancel_create', 'batch_exports_backfills_cancel_create', backfillsCancel),
} satisfies SomeHandlers;
