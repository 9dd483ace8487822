import type { FastifyRequest } from 'fastify';
import { eq } from 'drizzle-orm';
import { createBackfill, retryRun } from '../batch-exports/service.js';
import { isUuid } from '../db/queries/batch-exports.js';
import { backfillRunCounts, cancelRuns, getBackfill, getRun, setBackfillStatus, settleBackfill } from '../db/queries/batch-export-runs.js';
import { listBackfills, listRuns, type Cursor, type CursorPage } from '../db/queries/batch-export-lists.js';
import { batch_export_runs } from '../db/schema/index.js';
import { ApiError } from '../http/errors.js';
import { requestUrl } from '../http/pagination.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeBackfill, serializeRun } from '../serializers/batch-exports.js';
import { loadExport } from './batch-exports.js';

type Req = FastifyRequest<any>;

const MAX_PAGE = 1000;

function decodeCursor(raw: string | undefined): Cursor | undefined {
  if (!raw) return undefined;
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.v === 'string' && typeof c.id === 'string' && isUuid(c.id) && !Number.isNaN(Date.parse(c.v))) return c;
  } catch {
    // Falls through to DRF's answer for a cursor it cannot read.
  }
  throw ApiError.notFound('Invalid cursor');
}

function cursorPage<T, R>(req: Req, page: CursorPage<T>, map: (row: T) => R) {
  const link = (c: Cursor | null) => {
    if (!c) return null;
    const u = requestUrl(req);
    u.searchParams.set('cursor', Buffer.from(JSON.stringify(c)).toString('base64url'));
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
  if (Number.isNaN(d.getTime())) throw ApiError.validation(attr, 'Datetime has wrong format. Use ISO 8601 or a relative date such as -7d.');
  return d;
}

const limitOf = (q: { limit?: number }, fallback: number) => (q.limit && q.limit > 0 ? Math.min(q.limit, MAX_PAGE) : fallback);

async function loadRun(req: Req) {
  const exp = await loadExport(req);
  const { id } = req.params as { id: string };
  const run = isUuid(id) ? await getRun(req.server.db, exp.id, id) : undefined;
  if (!run) throw ApiError.notFound();
  return { exp, run };
}

async function loadBackfill(req: Req) {
  const exp = await loadExport(req);
  const { id } = req.params as { id: string };
  const backfill = isUuid(id) ? await getBackfill(req.server.db, exp.id, id) : undefined;
  if (!backfill) throw ApiError.notFound();
  return { exp, backfill };
}

async function presentBackfills(req: Req, rows: NonNullable<Awaited<ReturnType<typeof getBackfill>>>[]) {
  const counts = await backfillRunCounts(req.server.db, rows.map((b) => b.id));
  return rows.map((b) => serializeBackfill(b, counts.get(b.id) ?? {}));
}

const impl = {
  async runsList(req: Req) {
    const exp = await loadExport(req);
    const q = req.query as { cursor?: string; limit?: number; ordering?: string; after?: string; before?: string; start?: string; end?: string };
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
      decodeCursor(q.cursor),
      limitOf(q, 100),
    );
    return cursorPage(req, page, serializeRun);
  },

  async runsRetrieve(req: Req) {
    return serializeRun((await loadRun(req)).run);
  },

  async runsRetry(req: Req) {
    const { exp, run } = await loadRun(req);
    return { backfill_id: await retryRun(req.server.db, req.server.jobs, exp, run) };
  },

  async runsCancel(req: Req) {
    const { run } = await loadRun(req);
    if (run.status !== 'Running' && run.status !== 'Starting') {
      throw ApiError.validation(null, `Cannot cancel a run that is in '${run.status}' status`);
    }
    await cancelRuns(req.server.db, eq(batch_export_runs.id, run.id));
    if (run.backfill_id) await settleBackfill(req.server.db, run.backfill_id);
    return { cancelled: true };
  },

  async backfillsList(req: Req) {
    const exp = await loadExport(req);
    const q = req.query as { cursor?: string; limit?: number; ordering?: string };
    const ordering = q.ordering ?? '-created_at';
    const page = await listBackfills(
      req.server.db,
      exp.id,
      ordering.endsWith('start_at') ? 'start_at' : 'created_at',
      ordering.startsWith('-'),
      decodeCursor(q.cursor),
      limitOf(q, 50),
    );
    const results = await presentBackfills(req, page.rows);
    const byId = new Map(results.map((r) => [r.id, r]));
    return cursorPage(req, page, (b) => byId.get(b.id)!);
  },

  async backfillsCreate(req: Req) {
    const exp = await loadExport(req);
    const body = (req.body ?? {}) as { start_at?: string | null; end_at?: string | null };
    return { backfill_id: await createBackfill(req.server.db, req.server.jobs, exp, body.start_at, body.end_at) };
  },

  async backfillsRetrieve(req: Req) {
    const { backfill } = await loadBackfill(req);
    return (await presentBackfills(req, [backfill]))[0]!;
  },

  async backfillsCancel(req: Req) {
    const { backfill } = await loadBackfill(req);
    if (backfill.status !== 'Running' && backfill.status !== 'Starting') {
      throw ApiError.validation(null, `Cannot cancel a backfill that is in '${backfill.status}' status`);
    }
    await setBackfillStatus(req.server.db, backfill.id, 'Cancelled');
    await cancelRuns(req.server.db, eq(batch_export_runs.backfill_id, backfill.id));
    return { cancelled: true };
  },
};

export const batchExportRunHandlers = {
  batch_exports_runs_list: impl.runsList,
  batch_exports_runs_retrieve: impl.runsRetrieve,
  batch_exports_runs_retry_create: impl.runsRetry,
  batch_exports_runs_cancel_create: impl.runsCancel,
  batch_exports_backfills_list: impl.backfillsList,
  batch_exports_backfills_create: impl.backfillsCreate,
  batch_exports_backfills_retrieve: impl.backfillsRetrieve,
  batch_exports_backfills_cancel_create: impl.backfillsCancel,
  projects_batch_exports_runs_list: impl.runsList,
  projects_batch_exports_runs_retrieve: impl.runsRetrieve,
  projects_batch_exports_runs_retry_create: impl.runsRetry,
  projects_batch_exports_runs_cancel_create: impl.runsCancel,
  projects_batch_exports_backfills_list: impl.backfillsList,
  projects_batch_exports_backfills_create: impl.backfillsCreate,
  projects_batch_exports_backfills_retrieve: impl.backfillsRetrieve,
  projects_batch_exports_backfills_cancel_create: impl.backfillsCancel,
} satisfies SomeHandlers;
