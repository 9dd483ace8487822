import { and, eq, inArray, sql } from 'drizzle-orm';
import { rowsOf } from './util.js';
import type { Db } from '../client.js';
import { organization_memberships, personal_api_keys, projects, users } from '../schema/index.js';

export type UserRow = typeof users.$inferSelect;
export type KeyRow = typeof personal_api_keys.$inferSelect;

/** Everything a request needs to be authorised, loaded once per key and cached (src/http/auth-cache.ts). */
export interface Principal {
  user: UserRow;
  key: Pick<KeyRow, 'id' | 'scopes' | 'scoped_teams' | 'scoped_organizations' | 'last_used_at'>;
  /** organization id -> the user's membership level */
  memberships: Map<string, number>;
  /** project id -> organization id, for every project of the user's organizations (oldest first) */
  projects: Map<number, string>;
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
    .select({ organization_id: organization_memberships.organization_id, level: organization_memberships.level })
    .from(organization_memberships)
    .where(eq(organization_memberships.user_id, row.user.id))
    .orderBy(organization_memberships.joined_at);
  const orgIds = memberships.map((m) => m.organization_id);
  const projectRows = orgIds.length
    ? await db
        .select({ id: projects.id, organization_id: projects.organization_id })
        .from(projects)
        .where(inArray(projects.organization_id, orgIds))
        .orderBy(projects.id)
    : [];
  return {
    user: row.user,
    key: row.key,
    memberships: new Map(memberships.map((m) => [m.organization_id, m.level])),
    projects: new Map(projectRows.map((p) => [p.id, p.organization_id])),
  };
}

export async function touchKey(db: Db, keyId: string): Promise<void> {
  await db.update(personal_api_keys).set({ last_used_at: sql`now()` }).where(eq(personal_api_keys.id, keyId));
}

/** Which organization a project belongs to, for projects outside the caller's own (to tell 403 from 404). */
export async function unscopedProjectOrganization(db: Db, projectId: number): Promise<string | undefined> {
  const [row] = await db
    .select({ organization_id: projects.organization_id })
    .from(projects)
    .where(eq(projects.id, projectId))
    .limit(1);
  return row?.organization_id;
}

export async function unscopedOrganizationExists(db: Db, organizationId: string): Promise<boolean> {
  const rows = await db.execute(sql`select 1 from organizations where id = ${organizationId} limit 1`);
  return rowsOf(rows).length > 0;
}

/**
 * Sessions of this database whose last statement was a LISTEN on one of `channels`: the processes
 * listening for permission changes (a listening connection sends nothing else).
 */
export async function countListeners(db: Db, channels: string[]): Promise<number> {
  const texts = channels.map((c) => `listen "${c}"`);
  const result = await db.execute(
    sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and query in ${texts}`,
  );
  return rowsOf<{ n: number }>(result)[0]?.n ?? 0;
}
