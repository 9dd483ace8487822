import { and, asc, eq, ilike, inArray, max, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { hog_functions, person_distinct_ids, persons, projects, users } from '../db/schema/index.js';
import { userBasicColumns, type UserBasicRow } from '../users/queries.js';
import type { Page } from '../core/paging.js';

export type HogFunctionRow = typeof hog_functions.$inferSelect;
export type HogFunctionInsert = typeof hog_functions.$inferInsert;
export interface HogFunctionView {
  fn: HogFunctionRow;
  creator: UserBasicRow | null;
}

const withCreator = (db: Db) =>
  db
    .select({ fn: hog_functions, creator: userBasicColumns })
    .from(hog_functions)
    .leftJoin(users, eq(users.id, hog_functions.created_by));

export interface ListFilter {
  types?: string[];
  enabled?: boolean;
  id?: string;
  createdBy?: number;
  /** Instants as PostgreSQL reads them, matched to the millisecond the answers show. */
  createdAt?: string;
  updatedAt?: string;
  /** Every term must be in the name or the description. */
  searchTerms?: string[];
}

const likeOf = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const sameMillisecond = (column: typeof hog_functions.created_at, instant: string) =>
  sql`date_trunc('milliseconds', ${column}) = date_trunc('milliseconds', ${instant}::timestamptz)`;

export async function listHogFunctions(
  db: Db,
  projectId: number,
  filter: ListFilter,
  page: Page,
): Promise<{ count: number; rows: HogFunctionView[] }> {
  const conds: SQL[] = [eq(hog_functions.project_id, projectId), eq(hog_functions.deleted, false)];
  if (filter.types?.length) conds.push(inArray(hog_functions.type, filter.types));
  if (filter.enabled !== undefined) conds.push(eq(hog_functions.enabled, filter.enabled));
  if (filter.id !== undefined) conds.push(eq(hog_functions.id, filter.id));
  if (filter.createdBy !== undefined) conds.push(eq(hog_functions.created_by, filter.createdBy));
  if (filter.createdAt !== undefined) conds.push(sameMillisecond(hog_functions.created_at, filter.createdAt));
  if (filter.updatedAt !== undefined) conds.push(sameMillisecond(hog_functions.updated_at, filter.updatedAt));
  for (const term of filter.searchTerms ?? []) {
    const like = likeOf(term);
    conds.push(or(ilike(hog_functions.name, like), ilike(hog_functions.description, like)) as SQL);
  }
  const where = and(...conds);
  const [rows, [total]] = await Promise.all([
    withCreator(db)
      .where(where)
      .orderBy(sql`${hog_functions.execution_order} asc nulls last`, asc(hog_functions.created_at))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ n: sql<number>`count(*)::int` }).from(hog_functions).where(where),
  ]);
  return { count: total?.n ?? 0, rows };
}

/** One function of the project; deleted ones only when asked (a restore reads them). */
export async function getHogFunction(
  db: Db,
  projectId: number,
  id: string,
  withDeleted = false,
): Promise<HogFunctionView | undefined> {
  const conds = [eq(hog_functions.project_id, projectId), eq(hog_functions.id, id)];
  if (!withDeleted) conds.push(eq(hog_functions.deleted, false));
  const [row] = await withCreator(db)
    .where(and(...conds))
    .limit(1);
  return row;
}

export async function insertHogFunction(db: Db, values: HogFunctionInsert): Promise<HogFunctionRow> {
  const [row] = await db.insert(hog_functions).values(values).returning();
  if (!row) throw new Error('insert returned nothing');
  return row;
}

export async function updateHogFunction(
  db: Db,
  projectId: number,
  id: string,
  values: Partial<HogFunctionInsert>,
): Promise<void> {
  await db
    .update(hog_functions)
    .set({ ...values, updated_at: new Date() })
    .where(and(eq(hog_functions.project_id, projectId), eq(hog_functions.id, id)));
}

/** The next transformation's place: after the last one (PostHog counts from 1). */
export async function nextExecutionOrder(db: Db, projectId: number): Promise<number> {
  const [row] = await db
    .select({ top: max(hog_functions.execution_order) })
    .from(hog_functions)
    .where(
      and(
        eq(hog_functions.project_id, projectId),
        eq(hog_functions.type, 'transformation'),
        eq(hog_functions.deleted, false),
      ),
    );
  return (row?.top ?? 0) + 1;
}

export async function transformationsOf(db: Db, projectId: number): Promise<HogFunctionView[]> {
  return withCreator(db)
    .where(
      and(
        eq(hog_functions.project_id, projectId),
        eq(hog_functions.type, 'transformation'),
        eq(hog_functions.deleted, false),
      ),
    )
    .orderBy(sql`${hog_functions.execution_order} asc nulls last`, asc(hog_functions.created_at));
}

/** Enabled functions of a project that run on events, transformations in execution order. */
export async function runnableFunctions(db: Db, projectId: number): Promise<HogFunctionRow[]> {
  return db
    .select()
    .from(hog_functions)
    .where(
      and(
        eq(hog_functions.project_id, projectId),
        eq(hog_functions.enabled, true),
        eq(hog_functions.deleted, false),
        inArray(hog_functions.type, ['transformation', 'destination']),
      ),
    )
    .orderBy(sql`${hog_functions.execution_order} asc nulls last`, asc(hog_functions.created_at));
}

/** A function the worker is about to run: enabled and not deleted, else undefined (the job is dropped). */
export async function liveFunction(db: Db, id: string): Promise<HogFunctionRow | undefined> {
  const [row] = await db
    .select()
    .from(hog_functions)
    .where(and(eq(hog_functions.id, id), eq(hog_functions.enabled, true), eq(hog_functions.deleted, false)))
    .limit(1);
  return row;
}

/** The project's test account filters (PostHog's `team.test_account_filters`), which filters may include. */
export async function testAccountFiltersOf(db: Db, projectId: number): Promise<Record<string, unknown>[]> {
  const [row] = await db
    .select({ filters: projects.test_account_filters })
    .from(projects)
    .where(eq(projects.id, projectId));
  return row?.filters ?? [];
}

/** The project's functions whose filters include its test account filters (deleted ones too: they may return). */
export async function functionsFilteringTestAccounts(db: Db, projectId: number) {
  return db
    .select({ id: hog_functions.id, filters: hog_functions.filters })
    .from(hog_functions)
    .where(
      and(
        eq(hog_functions.project_id, projectId),
        sql`(${hog_functions.filters} ->> 'filter_test_accounts')::boolean is true`,
      ),
    );
}

export async function setFunctionFilters(db: Db, projectId: number, id: string, filters: Record<string, unknown>) {
  await db
    .update(hog_functions)
    .set({ filters })
    .where(and(eq(hog_functions.project_id, projectId), eq(hog_functions.id, id)));
}

/** The persons of these distinct ids in the project, as Hog reads them (`id` is the person's uuid). */
export async function personsOf(
  db: Db,
  projectId: number,
  distinctIds: string[],
): Promise<Map<string, { id: string; properties: Record<string, unknown> }>> {
  if (!distinctIds.length) return new Map();
  const rows = await db
    .select({ distinct_id: person_distinct_ids.distinct_id, uuid: persons.uuid, properties: persons.properties })
    .from(person_distinct_ids)
    .innerJoin(persons, eq(persons.id, person_distinct_ids.person_id))
    .where(and(eq(person_distinct_ids.project_id, projectId), inArray(person_distinct_ids.distinct_id, distinctIds)));
  return new Map(rows.map((r) => [r.distinct_id, { id: r.uuid, properties: r.properties as Record<string, unknown> }]));
}
