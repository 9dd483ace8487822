import { and, asc, desc, eq, inArray, lte, sql, type SQL, getTableColumns } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { batch_export_runs, batch_exports, projects } from '../db/schema/index.js';
import { isUuid } from '../core/ids.js';
import type { Page } from '../core/paging.js';
import { countWhere } from '../db/queries/util.js';

export type BatchExportRow = typeof batch_exports.$inferSelect;
export type BatchExportInsert = typeof batch_exports.$inferInsert;
export type RunRow = typeof batch_export_runs.$inferSelect;

/** Where a request stands: one project, or every project of an organization. */
export type ExportScope = { project_id: number } | { organization_id: string };

/** Rows whose `column` (a project id) is within the scope. */
export function scopeCondition(scope: ExportScope, column: AnyPgColumn = batch_exports.project_id): SQL {
  if ('project_id' in scope) return eq(column, scope.project_id);
  return inArray(
    column,
    sql`(select ${projects.id} from ${projects} where ${projects.organization_id} = ${scope.organization_id})`,
  );
}

/** The ids of the scope's exports, as a subquery: writes to runs filter by it. */
export function scopedExportIds(scope: ExportScope): SQL {
  return sql`(select ${batch_exports.id} from ${batch_exports} where ${scopeCondition(scope)})`;
}

const visible = (scope: ExportScope) => and(scopeCondition(scope), eq(batch_exports.deleted, false));

export async function listBatchExports(
  db: Db,
  scope: ExportScope,
  page: Page,
): Promise<{ count: number; rows: BatchExportRow[] }> {
  const where = visible(scope);
  const [count, rows] = await Promise.all([
    countWhere(db, batch_exports, where),
    db
      .select()
      .from(batch_exports)
      .where(where)
      .orderBy(desc(batch_exports.created_at), desc(batch_exports.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

export async function getBatchExport(db: Db, scope: ExportScope, id: string): Promise<BatchExportRow | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await db
    .select()
    .from(batch_exports)
    .where(and(visible(scope), eq(batch_exports.id, id)))
    .limit(1);
  return row;
}

/** For the runner: an export by id whatever its tenant. */
export async function getBatchExportById(db: Db, id: string): Promise<BatchExportRow | undefined> {
  const [row] = await db.select().from(batch_exports).where(eq(batch_exports.id, id)).limit(1);
  return row;
}

export async function insertBatchExport(db: Db, values: BatchExportInsert): Promise<BatchExportRow> {
  const [row] = await db.insert(batch_exports).values(values).returning();
  return row!;
}

export async function updateBatchExport(
  db: Db,
  scope: ExportScope,
  id: string,
  values: Partial<BatchExportInsert>,
  opts: { ifPaused?: boolean } = {},
): Promise<BatchExportRow | undefined> {
  const where = [eq(batch_exports.id, id), scopeCondition(scope)];
  if (opts.ifPaused !== undefined) where.push(eq(batch_exports.paused, opts.ifPaused));
  const [row] = await db
    .update(batch_exports)
    .set({ ...values, last_updated_at: sql`now()` })
    .where(and(...where))
    .returning();
  return row;
}

/**
 * Moves an export's schedule on past the runs just created. Unscoped: the scheduler serves every
 * tenant, and the id comes from `schedulableExports`, never from a request.
 */
export async function unscopedAdvanceSchedule(db: Db, id: string, through: Date): Promise<void> {
  await db
    .update(batch_exports)
    .set({ schedule_from: sql`greatest(${batch_exports.schedule_from}, ${through.toISOString()}::timestamptz)` })
    .where(and(eq(batch_exports.id, id), eq(batch_exports.paused, false)));
}

/** The oldest project of an organization: where the organization route creates exports by default. */
export async function oldestProjectId(db: Db, organizationId: string): Promise<number | undefined> {
  const [row] = await db
    .select({ id: projects.id })
    .from(projects)
    .where(eq(projects.organization_id, organizationId))
    .orderBy(asc(projects.created_at), asc(projects.id))
    .limit(1);
  return row?.id;
}

export async function projectInOrganization(db: Db, organizationId: string, projectId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: projects.id })
    .from(projects)
    .where(and(eq(projects.organization_id, organizationId), eq(projects.id, projectId)))
    .limit(1);
  return Boolean(row);
}

/** The 10 newest runs of each export, newest first, in one query. */
export async function latestRuns(db: Db, exportIds: string[]): Promise<Map<string, RunRow[]>> {
  const out = new Map<string, RunRow[]>(exportIds.map((id) => [id, []]));
  if (!exportIds.length) return out;
  const runs = batch_export_runs;
  const newest = sql`${runs.created_at} desc, ${runs.id} desc`;
  const ranked = db
    .select({
      ...getTableColumns(batch_export_runs),
      rn: sql<number>`row_number() over (partition by ${runs.batch_export_id} order by ${newest})`.as('rn'),
    })
    .from(batch_export_runs)
    .where(inArray(batch_export_runs.batch_export_id, exportIds))
    .as('ranked');
  const rows = await db.select().from(ranked).where(lte(ranked.rn, 10)).orderBy(asc(ranked.rn));
  for (const { rn: _rn, ...run } of rows) out.get(run.batch_export_id)?.push(run as RunRow);
  return out;
}

/** Exports the scheduler should look at: not paused, not deleted, not past their end. */
export async function schedulableExports(db: Db, now: Date): Promise<BatchExportRow[]> {
  return db
    .select()
    .from(batch_exports)
    .where(
      and(
        eq(batch_exports.paused, false),
        eq(batch_exports.deleted, false),
        sql`${batch_exports.schedule_from} < ${now.toISOString()}::timestamptz`,
        sql`(${batch_exports.end_at} is null or ${batch_exports.schedule_from} < ${batch_exports.end_at})`,
      ),
    )
    .orderBy(asc(batch_exports.schedule_from));
}
