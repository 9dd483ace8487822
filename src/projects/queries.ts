import { and, asc, count, desc, eq, inArray, isNotNull, ne, notInArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.js';
import {
  dashboards,
  organization_memberships,
  plugin_configs,
  plugins,
  project_activity_logs,
  projects,
  users,
  type ProjectActivityDetail,
  type ProductIntent,
} from '../db/schema/index.js';
import { newProjectToken } from '../tokens.js';
import { anyOf, countWhere, rowsOf } from '../db/queries/util.js';
import { prepared } from '../db/prepared.js';
import type { Page } from '../core/paging.js';

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
    | 'primary_dashboard_id'
  >
> & { settings?: Record<string, unknown> };

export async function insertProject(
  db: Db,
  organizationId: string,
  input: ProjectInput & { name: string },
  userId: number | null = null,
): Promise<ProjectRow> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(projects)
      .values({
        // A new project discards client IPs as its organization's `default_anonymize_ips` says, unless the request
        // says.
        anonymize_ips: sql`(select default_anonymize_ips from organizations where id = ${organizationId})`,
        ...input,
        organization_id: organizationId,
        api_token: newProjectToken(),
      })
      .returning();
    await logProjectActivity(tx, row!.id, userId, 'created', { name: row!.name, changes: null });
    return row!;
  });
}

const projectPage = prepared('projects_page', (db, name) =>
  db
    .select({ project: projects, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(projects)
    .where(anyOf(projects.organization_id, sql.placeholder('orgs')))
    .orderBy(asc(projects.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare(name),
);

/**
 * The projects of the organizations, by id: one prepared statement for any number of organizations,
 * the total coming as a window count (a page past the end, which has no row to carry it, counts apart).
 */
export async function listProjects(
  db: Db,
  organizationIds: string[],
  page: Page,
): Promise<{ count: number; rows: ProjectRow[] }> {
  if (!organizationIds.length) return { count: 0, rows: [] };
  const found = await projectPage(db).execute({ orgs: organizationIds, limit: page.limit, offset: page.offset });
  if (!found.length && page.offset > 0) {
    return { count: await countWhere(db, projects, anyOf(projects.organization_id, organizationIds)), rows: [] };
  }
  return { count: found[0]?.total ?? 0, rows: found.map((r) => r.project) };
}

/** The project `id` of the organization: every write of a project filters by both. */
const ownProject = (organizationId: string, id: number) =>
  and(eq(projects.id, id), eq(projects.organization_id, organizationId));

/** Locks the organization's project for the rest of the transaction; undefined when it is not theirs. */
async function lockProject(tx: Tx, organizationId: string, id: number): Promise<ProjectRow | undefined> {
  const [row] = await tx.select().from(projects).where(ownProject(organizationId, id)).for('update');
  return row;
}

/** Callers pass a project id the auth hook has already tied to the caller's organization. */
export async function getProject(db: Db, id: number): Promise<ProjectRow | undefined> {
  const [row] = await db.select().from(projects).where(eq(projects.id, id)).limit(1);
  return row;
}

/** Whether the dashboard exists (not deleted) in the project: only those can be its primary dashboard. */
export async function isProjectDashboard(db: Db, projectId: number, dashboardId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: dashboards.id })
    .from(dashboards)
    .where(and(eq(dashboards.project_id, projectId), eq(dashboards.id, dashboardId), eq(dashboards.deleted, false)))
    .limit(1);
  return row !== undefined;
}

/**
 * Applies the changes and logs, in the same transaction, the fields whose values changed.
 * `settings` keys are merged into the stored ones, so a PATCH of one setting keeps the others.
 */
export async function updateProject(
  db: Db,
  organizationId: string,
  id: number,
  input: ProjectInput,
  userId: number,
  describe: (before: ProjectRow, after: ProjectRow) => ProjectActivityDetail['changes'],
): Promise<ProjectRow | undefined> {
  return db.transaction(async (tx) => {
    const before = await lockProject(tx, organizationId, id);
    if (!before) return undefined;
    const { settings, ...columns } = input;
    const [row] = await tx
      .update(projects)
      .set({
        ...columns,
        ...(settings ? { settings: sql`${projects.settings} || ${JSON.stringify(settings)}::jsonb` } : {}),
        updated_at: sql`now()`,
      })
      .where(ownProject(organizationId, id))
      .returning();
    const changes = describe(before, row!);
    if (changes?.length) await logProjectActivity(tx, id, userId, 'updated', { name: row!.name, changes });
    return row;
  });
}

export async function deleteProject(db: Db, organizationId: string, id: number): Promise<boolean> {
  // In a transaction of its own: a change of who may do what invalidates the auth caches before it returns.
  const rows = await db.transaction((tx) =>
    tx.delete(projects).where(ownProject(organizationId, id)).returning({ id: projects.id }),
  );
  return rows.length > 0;
}

/** A new token; the old one stops ingesting at once (ingestion looks the token up per request). */
export async function resetProjectToken(
  db: Db,
  organizationId: string,
  id: number,
  userId: number,
): Promise<ProjectRow | undefined> {
  return db.transaction(async (tx) => {
    const before = await lockProject(tx, organizationId, id);
    if (!before) return undefined;
    const [row] = await tx
      .update(projects)
      .set({ api_token: newProjectToken(), updated_at: sql`now()` })
      .where(ownProject(organizationId, id))
      .returning();
    await logProjectActivity(tx, id, userId, 'updated', {
      name: row!.name,
      changes: [
        { type: 'Team', action: 'changed', field: 'api_token', before: before.api_token, after: row!.api_token },
      ],
    });
    return row;
  });
}

/** Adds the product to the project's intents, or refreshes it; `completed` also stamps its onboarding. */
export async function registerProductIntent(
  db: Db,
  organizationId: string,
  id: number,
  productType: string,
  completed: boolean,
): Promise<ProjectRow | undefined> {
  return db.transaction(async (tx) => {
    const before = await lockProject(tx, organizationId, id);
    if (!before) return undefined;
    const now = new Date().toISOString();
    const intents: ProductIntent[] = before.product_intents.map((i) => ({ ...i }));
    let intent = intents.find((i) => i.product_type === productType);
    if (!intent) {
      intent = { product_type: productType, created_at: now, updated_at: now, onboarding_completed_at: null };
      intents.push(intent);
    }
    intent.updated_at = now;
    if (completed && !intent.onboarding_completed_at) intent.onboarding_completed_at = now;
    const [row] = await tx
      .update(projects)
      .set({ product_intents: intents })
      .where(ownProject(organizationId, id))
      .returning();
    return row;
  });
}

export type MoveRefusal = 'private_plugins';

/**
 * Moves the project to another organization. Users whose current project it is follow it when they
 * belong to the target organization; everyone else loses it as their current project (and their
 * current organization, which they would otherwise keep pointing at through a project no longer in it).
 */
export async function moveProject(
  db: Db,
  organizationId: string,
  id: number,
  target: { id: string },
  userId: number,
): Promise<ProjectRow | MoveRefusal | undefined> {
  return db.transaction(async (tx) => {
    const before = await lockProject(tx, organizationId, id);
    if (!before) return undefined;
    // A config of a plugin private to the old organization would show its source to the new one.
    const [privatePlugins] = await tx
      .select({ n: count() })
      .from(plugin_configs)
      .innerJoin(plugins, eq(plugins.id, plugin_configs.plugin_id))
      .where(
        and(
          eq(plugin_configs.project_id, id),
          isNotNull(plugins.organization_id),
          ne(plugins.organization_id, target.id),
        ),
      );
    if (privatePlugins!.n > 0) return 'private_plugins';
    const [row] = await tx
      .update(projects)
      .set({ organization_id: target.id, updated_at: sql`now()` })
      .where(ownProject(organizationId, id))
      .returning();
    const members = tx
      .select({ id: organization_memberships.user_id })
      .from(organization_memberships)
      .where(eq(organization_memberships.organization_id, target.id));
    await tx
      .update(users)
      .set({ current_organization_id: target.id })
      .where(and(eq(users.current_team_id, id), inArray(users.id, members)));
    await tx
      .update(users)
      .set({ current_team_id: null, current_organization_id: null })
      .where(and(eq(users.current_team_id, id), notInArray(users.id, members)));
    await logProjectActivity(tx, id, userId, 'updated', {
      name: 'moved to another organization',
      changes: [
        { type: 'Team', action: 'changed', field: 'organization_id', before: before.organization_id, after: target.id },
      ],
    });
    return row;
  });
}

async function logProjectActivity(
  tx: Tx,
  projectId: number,
  userId: number | null,
  activity: 'created' | 'updated',
  detail: ProjectActivityDetail,
): Promise<void> {
  // clock_timestamp, not now(): entries of one transaction still come out in the order they were made.
  await tx
    .insert(project_activity_logs)
    .values({ project_id: projectId, user_id: userId, activity, detail, created_at: sql`clock_timestamp()` });
}

export type ProjectActivityRow = typeof project_activity_logs.$inferSelect;

export async function projectActivityPage(db: Db, projectId: number, limit: number, page: number) {
  const where = eq(project_activity_logs.project_id, projectId);
  const [total, rows] = await Promise.all([
    countWhere(db, project_activity_logs, where),
    db
      .select()
      .from(project_activity_logs)
      .where(where)
      .orderBy(desc(project_activity_logs.created_at), desc(project_activity_logs.id))
      .limit(limit)
      .offset((page - 1) * limit),
  ]);
  return { total, rows };
}

/**
 * The project's timezone: where a query's days, weeks and months begin. A request's project carries it
 * (ProjectTenant); this is for work outside a request (a batch export's run).
 */
export async function projectTimezone(db: Db, projectId: number): Promise<string> {
  const rows = await db.execute(sql`select timezone from ${projects} where id = ${projectId}`);
  return rowsOf<{ timezone: string }>(rows)[0]?.timezone ?? 'UTC';
}
