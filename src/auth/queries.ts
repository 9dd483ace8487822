import { and, eq, inArray, sql } from 'drizzle-orm';
import { rowsOf } from '../db/queries/util.js';
import { LISTENER_APPLICATION_NAME, type Db } from '../db/client.js';
import { organization_memberships, organizations, personal_api_keys, projects, users } from '../db/schema/index.js';

export type UserRow = typeof users.$inferSelect;
export type KeyRow = typeof personal_api_keys.$inferSelect;

/**
 * A project of the user's organizations: its organization, and its timezone (where its queries cut days),
 * which rides here so that a project route knows it without another query.
 */
export interface PrincipalProject {
  organization_id: string;
  timezone: string;
}

/** Everything a request needs to be authorised, loaded once per key and cached (src/http/auth-cache.ts). */
export interface Principal {
  user: UserRow;
  key: Pick<KeyRow, 'id' | 'scopes' | 'scoped_teams' | 'scoped_organizations' | 'last_used_at'>;
  /** organization id -> the user's membership level */
  memberships: Map<string, number>;
  /** project id -> its organization and timezone, for every project of the user's organizations (oldest first) */
  projects: Map<number, PrincipalProject>;
  /**
   * organization id -> name, for the organizations whose `members_can_use_personal_api_keys` is off
   * while this user is below administrator there: this key may not act on them or their projects.
   */
  keyRefused: Map<string, string>;
}

export async function loadPrincipal(db: Db, secureValue: string): Promise<Principal | undefined> {
  const [row] = await db
    .select({ key: personal_api_keys, user: users })
    .from(personal_api_keys)
    .innerJoin(users, eq(users.id, personal_api_keys.user_id))
    .where(and(eq(personal_api_keys.secure_value, secureValue), eq(users.is_active, true)))
    .limit(1);
  if (!row) return undefined;
  const memberships = await db
    .select({
      organization_id: organization_memberships.organization_id,
      level: organization_memberships.level,
      name: organizations.name,
      keys_allowed: organizations.members_can_use_personal_api_keys,
    })
    .from(organization_memberships)
    .innerJoin(organizations, eq(organizations.id, organization_memberships.organization_id))
    .where(eq(organization_memberships.user_id, row.user.id))
    .orderBy(organization_memberships.joined_at);
  const orgIds = memberships.map((m) => m.organization_id);
  const projectRows = orgIds.length
    ? await db
        .select({ id: projects.id, organization_id: projects.organization_id, timezone: projects.timezone })
        .from(projects)
        .where(inArray(projects.organization_id, orgIds))
        .orderBy(projects.id)
    : [];
  return {
    user: row.user,
    key: row.key,
    memberships: new Map(memberships.map((m) => [m.organization_id, m.level])),
    projects: new Map(projectRows.map(({ id, ...project }) => [id, project])),
    // Administrators (8) and owners keep their keys whatever the setting, as in PostHog.
    keyRefused: new Map(
      memberships.filter((m) => !m.keys_allowed && m.level < 8).map((m) => [m.organization_id, m.name]),
    ),
  };
}

/** Keys belong to a user, not to a tenant: the user is their scope, as in personal-api-keys. */
export async function touchKey(db: Db, userId: number, keyId: string): Promise<void> {
  await db
    .update(personal_api_keys)
    .set({ last_used_at: sql`now()` })
    .where(and(eq(personal_api_keys.id, keyId), eq(personal_api_keys.user_id, userId)));
}

/** A project outside the caller's own, as the principal holds one (to tell 403 from 404). */
export async function unscopedProject(db: Db, projectId: number): Promise<PrincipalProject | undefined> {
  const [row] = await db
    .select({ organization_id: projects.organization_id, timezone: projects.timezone })
    .from(projects)
    .where(eq(projects.id, projectId))
    .limit(1);
  return row;
}

export async function unscopedOrganizationExists(db: Db, organizationId: string): Promise<boolean> {
  const rows = await db.execute(sql`select 1 from organizations where id = ${organizationId} limit 1`);
  return rowsOf(rows).length > 0;
}

/**
 * The processes listening for permission changes on this database: their LISTEN connections, found
 * by application name (visible to every role, unlike the query text of another role's session).
 */
export async function countListeners(db: Db): Promise<number> {
  const result = await db.execute(
    sql`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and starts_with(application_name, ${`${LISTENER_APPLICATION_NAME}:`})`,
  );
  return rowsOf<{ n: number }>(result)[0]?.n ?? 0;
}
