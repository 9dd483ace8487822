import type { FastifyRequest } from 'fastify';
import { exportLogs, exportScope, loadBackfill, loadExport, loadRun, presentBackfills } from './load.js';
import { cancelBackfill, cancelRun, createBackfill, retryRun } from './service.js';
import { decodeCursor, encodeCursor } from '../core/cursor.js';
import { ApiError } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { clampLimit } from '../core/paging.js';
import { listBackfills, listRuns, type Cursor, type CursorPage } from './list-queries.js';
import { getBackfill } from './run-queries.js';
import { paginated, requestUrl } from '../http/pagination.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeRun } from './serialize.js';
import { twins, type TwinHandler } from './twin-handlers.js';

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

const pathRun = (req: FastifyRequest<{ Params: Nested }>) =>
  loadRun(req.server.db, exportScope(req.tenant), req.params.batch_export_id, req.params.id);

const pathBackfill = (req: FastifyRequest<{ Params: Nested }>) =>
  loadBackfill(req.server.db, exportScope(req.tenant), req.params.batch_export_id, req.params.id);

/** The export the path's `batch_export_id` names within the caller's tenant, or a 404. */
const pathExport = (req: FastifyRequest<{ Params: { batch_export_id: string } }>) =>
  loadExport(req.server.db, exportScope(req.tenant), req.params.batch_export_id);

/**
 * PostHog's OrderingFilter: comma-separated terms, unknown fields dropped, the default when none is
 * left. Our pages order by one field, the first known one.
 */
function orderingOf(raw: string | undefined, fields: readonly string[]): { field: string; descending: boolean } {
  for (const term of (raw ?? '').split(',')) {
    const t = term.trim();
    const field = t.startsWith('-') ? t.slice(1) : t;
    if (fields.includes(field)) return { field, descending: t.startsWith('-') };
  }
  return { field: 'created_at', descending: true };
}

const runsList: TwinHandler<'projects_batch_exports_runs_list'> = async (req) => {
  const exp = await pathExport(req);
  const q = req.query;
  const ordering = orderingOf(q.ordering, ['created_at', 'data_interval_start']);
  const byInterval = ordering.field === 'data_interval_start';
  const weekAgo = new Date(Date.now() - 7 * 86_400_000);
  const page = await listRuns(
    req.server.db,
    exp.id,
    {
      orderBy: byInterval ? 'data_interval_start' : 'created_at',
      descending: ordering.descending,
      from: byInterval ? parseDate(q.start, weekAgo, 'start') : parseDate(q.after, weekAgo, 'after'),
      to: byInterval ? parseDate(q.end, new Date(), 'end') : parseDate(q.before, new Date(), 'before'),
    },
    cursorOf(q.cursor),
    clampLimit(q.limit, 100),
  );
  return cursorPage(req, page, serializeRun);
};

const runsRetrieve: TwinHandler<'projects_batch_exports_runs_retrieve'> = async (req) =>
  serializeRun((await pathRun(req)).run);

const runsRetry: TwinHandler<'projects_batch_exports_runs_retry_create'> = async (req) => {
  const { exp, run } = await pathRun(req);
  return { backfill_id: await retryRun(req.server.db, exportScope(req.tenant), req.server.jobs, exp, run) };
};

const runsCancel: TwinHandler<'projects_batch_exports_runs_cancel_create'> = async (req) => {
  const { run } = await pathRun(req);
  await cancelRun(req.server.db, exportScope(req.tenant), run);
  return { cancelled: true };
};

/** PostHog's LogEntryMixin on a run: the export's entries of this run (its `instance_id`). */
const runsLogs: TwinHandler<'projects_batch_exports_runs_logs_retrieve'> = async (req) => {
  const { exp, run } = await pathRun(req);
  const { page, count, results } = await exportLogs(req.server.db, exp, req.query, run.id);
  return paginated(req, page, count, results);
};

const backfillsList: TwinHandler<'projects_batch_exports_backfills_list'> = async (req) => {
  const exp = await pathExport(req);
  const q = req.query;
  const ordering = orderingOf(q.ordering, ['created_at', 'start_at']);
  const page = await listBackfills(
    req.server.db,
    exp.id,
    ordering.field as 'start_at' | 'created_at',
    ordering.descending,
    cursorOf(q.cursor),
    clampLimit(q.limit, 50),
  );
  const results = await presentBackfills(req.server.db, page.rows);
  const byId = new Map(results.map((r) => [r.id, r]));
  return cursorPage(req, page, (b) => byId.get(b.id)!);
};

const backfillsCreate: TwinHandler<'projects_batch_exports_backfills_create'> = async (req, reply) => {
  const exp = await pathExport(req);
  const body = req.body ?? {};
  const id = await createBackfill(
    req.server.db,
    exportScope(req.tenant),
    req.server.jobs,
    exp,
    body.start_at,
    body.end_at,
  );
  const row = await getBackfill(req.server.db, exp.id, id);
  if (!row) throw new Error(`Backfill ${id} vanished after its creation`);
  reply.code(201);
  return { ...(await presentBackfills(req.server.db, [row]))[0]!, backfill_id: id };
};

const backfillsRetrieve: TwinHandler<'projects_batch_exports_backfills_retrieve'> = async (req) => {
  const { backfill } = await pathBackfill(req);
  return (await presentBackfills(req.server.db, [backfill]))[0]!;
};

const backfillsCancel: TwinHandler<'projects_batch_exports_backfills_cancel_create'> = async (req) => {
  const { backfill } = await pathBackfill(req);
  await cancelBackfill(req.server.db, exportScope(req.tenant), backfill);
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
