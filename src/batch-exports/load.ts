// Loading and presenting batch exports, their runs, backfills and logs: functions of the database, the
// tenant scope and plain values. Handlers turn a request into these and page the answer.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { pageOf } from '../core/paging.js';
import type { Tenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import { listLogs } from './list-queries.js';
import { backfillRunCounts, getBackfill, getRun, type BackfillRow } from './run-queries.js';
import { getBatchExport, latestRuns, type BatchExportRow, type ExportScope } from './queries.js';
import { serializeBackfill, serializeBatchExport, serializeLog } from './serialize.js';

type Schemas = components['schemas'];

/** The exports a tenant reaches: its project's, or on an organization route every project's of it. */
export function exportScope(tenant: Tenant): ExportScope {
  const { project_id, organization_id } = tenant;
  return project_id !== undefined ? { project_id } : { organization_id };
}

/** The export `id` within `scope`, or a 404. */
export async function loadExport(db: Db, scope: ExportScope, id: string): Promise<BatchExportRow> {
  const exp = await getBatchExport(db, scope, id);
  if (!exp) throw ApiError.notFound();
  return exp;
}

/** Run `id` of the export `exportId` within `scope`, or a 404. */
export async function loadRun(db: Db, scope: ExportScope, exportId: string, id: string) {
  const exp = await loadExport(db, scope, exportId);
  const run = isUuid(id) ? await getRun(db, exp.id, id) : undefined;
  if (!run) throw ApiError.notFound();
  return { exp, run };
}

/** Backfill `id` of the export `exportId` within `scope`, or a 404. */
export async function loadBackfill(db: Db, scope: ExportScope, exportId: string, id: string) {
  const exp = await loadExport(db, scope, exportId);
  const backfill = isUuid(id) ? await getBackfill(db, exp.id, id) : undefined;
  if (!backfill) throw ApiError.notFound();
  return { exp, backfill };
}

/** Exports with their latest runs (one query for all of them). */
export async function presentExports(db: Db, rows: BatchExportRow[]): Promise<Schemas['BatchExport'][]> {
  const runs = await latestRuns(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => serializeBatchExport(r, runs.get(r.id) ?? []));
}

export const presentExport = async (db: Db, row: BatchExportRow) => (await presentExports(db, [row]))[0]!;

/** Backfills with their runs counted by status (one query for all of them). */
export async function presentBackfills(db: Db, rows: BackfillRow[]): Promise<Schemas['BatchExportBackfill'][]> {
  const counts = await backfillRunCounts(
    db,
    rows.map((b) => b.id),
  );
  return rows.map((b) => serializeBackfill(b, counts.get(b.id) ?? {}));
}

export interface LogQuery {
  limit?: number;
  offset?: number;
  level?: string[];
  search?: string;
  after?: string;
  before?: string;
  instance_id?: string;
}

/** A page of the export's log entries, serialized; `runId` narrows it to one run's. */
export async function exportLogs(db: Db, exp: BatchExportRow, q: LogQuery, runId?: string) {
  const page = pageOf(q, 50);
  const levels = (q.level ?? [])
    .flatMap((l) => l.split(','))
    .map((l) => l.trim())
    .filter(Boolean);
  const instance = runId ?? q.instance_id;
  const { count, rows } = await listLogs(
    db,
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
  return { page, count, results: rows.map(serializeLog) };
}
