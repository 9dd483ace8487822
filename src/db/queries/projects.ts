import { asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { projects } from '../schema/index.js';
import type { Page } from '../../http/pagination.js';
import { newProjectToken } from '../../tokens.js';
import { countWhere } from './util.js';

export type ProjectRow = typeof projects.$inferSelect;
export type ProjectInput = Partial<
  Pick<
    ProjectRow,
    | 'name'
    | 'timezone'
    | 'completed_snippet_onboarding'
    | 'has_completed_onboarding_for'
    | 'is_demo'
    | 'access_control'
    | 'app_urls'
    | 'anonymize_ips'
    | 'test_account_filters'
    | 'product_description'
    | 'autocapture_opt_out'
    | 'heatmaps_opt_in'
  >
>;

export async function insertProject(db: Db, organizationId: string, input: ProjectInput & { name: string }): Promise<ProjectRow> {
  const [row] = await db
    .insert(projects)
    .values({ ...input, organization_id: organizationId, api_token: newProjectToken() })
    .returning();
  return row!;
}

export async function listProjects(db: Db, organizationIds: string[], page: Page): Promise<{ count: number; rows: ProjectRow[] }> {
  if (!organizationIds.length) return { count: 0, rows: [] };
  const where = inArray(projects.organization_id, organizationIds);
  const [count, rows] = await Promise.all([
    countWhere(db, projects, where),
    db.select().from(projects).where(where).orderBy(asc(projects.id)).limit(page.limit).offset(page.offset),
  ]);
  return { count, rows };
}

/** Callers pass a project id the auth hook has already tied to the caller's organization. */
export async function getProject(db: Db, id: number): Promise<ProjectRow | undefined> {
  const [row] = await db.select().from(projects).where(eq(projects.id, id)).limit(1);
  return row;
}

export async function updateProject(db: Db, id: number, input: ProjectInput): Promise<ProjectRow | undefined> {
  const [row] = await db
    .update(projects)
    .set({ ...input, updated_at: sql`now()` })
    .where(eq(projects.id, id))
    .returning();
  return row;
}

export async function deleteProject(db: Db, id: number): Promise<void> {
  await db.delete(projects).where(eq(projects.id, id));
}
