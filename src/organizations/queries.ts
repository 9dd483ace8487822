import { asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { organization_memberships, organizations, projects, users } from '../db/schema/index.js';
import type { Page } from '../core/paging.js';
import { insertProject, type ProjectRow } from '../projects/queries.js';
import { prepared } from '../db/prepared.js';
import { anyOf, countWhere, jsonRows } from '../db/queries/util.js';
import { randomBytes } from 'node:crypto';

export type OrganizationRow = typeof organizations.$inferSelect;
export const ORGANIZATION_WRITABLE = [
  'name',
  'logo_media_id',
  'is_member_join_email_enabled',
  'enforce_2fa',
  'members_can_invite',
  'members_can_use_personal_api_keys',
  'allow_publicly_shared_resources',
  'is_ai_data_processing_approved',
  'default_experiment_stats_method',
  'default_anonymize_ips',
] as const;
export type OrganizationInput = Partial<Pick<OrganizationRow, (typeof ORGANIZATION_WRITABLE)[number]>>;

const MAX_SLUG = 48;

/** Django's slugify, cut to 48 characters as PostHog's create_with_slug does. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[^\x00-\x7f]/g, '')
    .replace(/[^\w\s-]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[-\s]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '')
    .slice(0, MAX_SLUG);
}

function randomLetters(n: number): string {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  return [...randomBytes(n)].map((b) => letters[b % 26]).join('');
}

export async function listOrganizations(
  db: Db,
  ids: string[],
  page: Page,
): Promise<{ count: number; rows: OrganizationRow[] }> {
  if (!ids.length) return { count: 0, rows: [] };
  const where = inArray(organizations.id, ids);
  const [count, rows] = await Promise.all([
    countWhere(db, organizations, where),
    db
      .select()
      .from(organizations)
      .where(where)
      .orderBy(asc(organizations.created_at), asc(organizations.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

const organizationById = prepared('organization_by_id', (db, name) =>
  db
    .select()
    .from(organizations)
    .where(eq(organizations.id, sql.placeholder('id')))
    .limit(1)
    .prepare(name),
);

export async function getOrganization(db: Db, id: string): Promise<OrganizationRow | undefined> {
  const [row] = await organizationById(db).execute({ id });
  return row;
}

const projectRow = jsonRows(projects);

// The one-table select leaves columns unqualified, which the subqueries' own tables would shadow.
const organizationId = sql.raw('"organizations"."id"');
const organizationView = prepared('organization_view', (db, name) =>
  db
    .select({
      organization: organizations,
      projects: sql<Record<string, unknown>[]>`coalesce((select json_agg(p order by p.id) from ${projects} p
        where p.organization_id = ${organizationId}), '[]'::json)`,
    })
    .from(organizations)
    .where(eq(organizations.id, sql.placeholder('id')))
    .prepare(name),
);

/** An organization with its projects (`organizationExtras`), in one statement. */
export async function getOrganizationView(
  db: Db,
  id: string,
): Promise<{ organization: OrganizationRow; extras: OrganizationExtras } | undefined> {
  const [row] = await organizationView(db).execute({ id });
  if (!row) return undefined;
  return {
    organization: row.organization,
    extras: { projects: row.projects.map(projectRow) },
  };
}

/** What an organization's answer shows beyond its own row (its member count is a column, kept by triggers). */
export interface OrganizationExtras {
  projects: ProjectRow[];
}

const projectsOf = prepared('organization_projects', (db, name) =>
  db
    .select()
    .from(projects)
    .where(anyOf(projects.organization_id, sql.placeholder('ids')))
    .orderBy(asc(projects.id))
    .prepare(name),
);

/** The projects of several organizations, in one query. */
export async function organizationExtras(db: Db, ids: string[]): Promise<Map<string, OrganizationExtras>> {
  const out = new Map<string, OrganizationExtras>(ids.map((id) => [id, { projects: [] }]));
  if (!ids.length) return out;
  for (const p of await projectsOf(db).execute({ ids })) out.get(p.organization_id)?.projects.push(p);
  return out;
}

/**
 * Creates an organization owned by `userId` with a first project, and makes both the user's current
 * ones (PostHog's Organization.objects.bootstrap).
 */
export async function createOrganization(
  db: Db,
  input: OrganizationInput & { name: string },
  userId: number,
): Promise<{ organization: OrganizationRow; project: ProjectRow }> {
  return db.transaction(async (tx) => {
    const base = slugify(input.name) || 'organization';
    let organization: OrganizationRow | undefined;
    for (let attempt = 0; !organization && attempt < 10; attempt++) {
      const slug = attempt === 0 ? base : `${base.slice(0, 43)}-${randomLetters(4)}`;
      [organization] = await tx
        .insert(organizations)
        .values({ ...input, slug })
        .onConflictDoNothing({ target: organizations.slug })
        .returning();
    }
    if (!organization) throw new Error('could not find a free organization slug');
    await tx.insert(organization_memberships).values({ organization_id: organization.id, user_id: userId, level: 15 });
    // The owner's membership has just counted them (drizzle/0017): the row inserted above predates it.
    const counted = (await getOrganization(tx, organization.id))!;
    const project = await insertProject(tx, organization.id, { name: 'Default project' });
    await tx
      .update(users)
      .set({ current_organization_id: organization.id, current_team_id: project.id })
      .where(eq(users.id, userId));
    return { organization: counted, project };
  });
}

export async function updateOrganization(
  db: Db,
  id: string,
  input: OrganizationInput,
): Promise<OrganizationRow | undefined> {
  const [row] = await db
    .update(organizations)
    .set({ ...input, updated_at: sql`now()` })
    .where(eq(organizations.id, id))
    .returning();
  return row;
}

export async function deleteOrganization(db: Db, id: string): Promise<void> {
  // In a transaction of its own: a change of who may do what invalidates the auth caches before it returns.
  await db.transaction((tx) => tx.delete(organizations).where(eq(organizations.id, id)));
}

export async function addMembership(db: Db, organizationId: string, userId: number, level: number): Promise<void> {
  await db
    .insert(organization_memberships)
    .values({ organization_id: organizationId, user_id: userId, level })
    .onConflictDoUpdate({
      target: [organization_memberships.organization_id, organization_memberships.user_id],
      set: { level, updated_at: sql`now()` },
    });
}
