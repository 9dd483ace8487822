import { and, asc, eq, isNotNull, ne, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { organization_domains, organization_memberships, organizations, users } from '../db/schema/index.js';
import { randomToken } from '../tokens.js';
import { prepared } from '../db/prepared.js';
import { anyOf, countWhere } from '../db/queries/util.js';
import { jsonObject } from '../db/queries/json.js';
import { sqlState } from '../core/sql-state.js';
import type { Page } from '../core/paging.js';

export type UserRow = typeof users.$inferSelect;

/** The columns a user embedded in another answer shows (the contract's UserBasic): lists read only these. */
export const userBasicColumns = {
  id: users.id,
  uuid: users.uuid,
  distinct_id: users.distinct_id,
  first_name: users.first_name,
  last_name: users.last_name,
  email: users.email,
  is_email_verified: users.is_email_verified,
  hedgehog_config: users.hedgehog_config,
  role_at_organization: users.role_at_organization,
};
export type UserBasicRow = Pick<UserRow, keyof typeof userBasicColumns>;

/** A user as the contract's UserBasic, from the columns `userBasicColumns` names (of `users` or an alias). */
export function userBasicJson(u: Record<keyof typeof userBasicColumns, PgColumn> = users): SQL<string> {
  const keys = Object.keys(userBasicColumns) as (keyof typeof userBasicColumns)[];
  return jsonObject(Object.fromEntries(keys.map((key) => [key, u[key]])));
}

export async function getUser(db: Db, id: number): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return row;
}

const usersAmong = prepared('users_among', (db, name) =>
  db
    .select()
    .from(users)
    .where(anyOf(users.id, sql.placeholder('ids')))
    .prepare(name),
);

export async function getUsers(db: Db, ids: number[]): Promise<Map<number, UserRow>> {
  if (!ids.length) return new Map();
  const rows = await usersAmong(db).execute({ ids: [...new Set(ids)] });
  return new Map(rows.map((u) => [u.id, u]));
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(eq(users.email, normalizeEmail(email)))
    .limit(1);
  return row;
}

/** PostHog lower-cases the domain part of an e-mail address. */
export function normalizeEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0
    ? email.trim()
    : `${email.slice(0, at).trim()}@${email
        .slice(at + 1)
        .trim()
        .toLowerCase()}`;
}

export async function createUser(
  db: Db,
  input: { email: string; first_name?: string; last_name?: string },
): Promise<UserRow> {
  const [row] = await db
    .insert(users)
    .values({
      email: normalizeEmail(input.email),
      first_name: input.first_name ?? '',
      last_name: input.last_name ?? '',
      distinct_id: randomToken(32),
    })
    .returning();
  return row!;
}

export async function userOrganizations(db: Db, userId: number) {
  return db
    .select({ organization: organizations, level: organization_memberships.level })
    .from(organization_memberships)
    .innerJoin(organizations, eq(organizations.id, organization_memberships.organization_id))
    .where(eq(organization_memberships.user_id, userId))
    .orderBy(asc(organization_memberships.joined_at));
}

export async function countUsers(db: Db): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(users);
  return row?.n ?? 0;
}

/** An active user by uuid (for staff, who may name any user). */
export async function getActiveUserByUuid(db: Db, uuid: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.uuid, uuid), eq(users.is_active, true)))
    .limit(1);
  return row;
}

export interface UserFilter {
  /** Limits the list to one user: the caller, unless they are staff. */
  onlyId?: number;
  email?: string;
  is_staff?: boolean;
}

export async function listUsers(db: Db, filter: UserFilter, page: Page): Promise<{ count: number; rows: UserRow[] }> {
  const conditions: SQL[] = [eq(users.is_active, true)];
  if (filter.onlyId !== undefined) conditions.push(eq(users.id, filter.onlyId));
  if (filter.email !== undefined) conditions.push(eq(users.email, filter.email));
  if (filter.is_staff !== undefined) conditions.push(eq(users.is_staff, filter.is_staff));
  const where = and(...conditions);
  const [count, rows] = await Promise.all([
    countWhere(db, users, where),
    db.select().from(users).where(where).orderBy(asc(users.id)).limit(page.limit).offset(page.offset),
  ]);
  return { count, rows };
}

export type UserInput = Partial<
  Pick<
    UserRow,
    | 'first_name'
    | 'last_name'
    | 'email'
    | 'anonymize_data'
    | 'toolbar_mode'
    | 'is_staff'
    | 'events_column_config'
    | 'has_seen_product_intro_for'
    | 'theme_mode'
    | 'hedgehog_config'
    | 'allow_sidebar_suggestions'
    | 'role_at_organization'
    | 'partial_notification_settings'
    | 'current_organization_id'
    | 'current_team_id'
  >
>;

/** Updates one user; undefined when the new e-mail address belongs to someone else. */
export async function updateUser(db: Db, id: number, input: UserInput): Promise<UserRow | undefined> {
  if (!Object.keys(input).length) return getUser(db, id);
  try {
    // In a transaction of its own: a change of who may do what invalidates the auth caches before it returns.
    const [row] = await db.transaction((tx) => tx.update(users).set(input).where(eq(users.id, id)).returning());
    return row;
  } catch (err) {
    if (sqlState(err) === '23505') return undefined;
    throw err;
  }
}

/**
 * Whether a verified domain of the organization enforces a login provider for this address's domain
 * (PostHog's get_sso_enforcement_for_email_address, limited to the user's current organization).
 */
export async function ssoEnforcedFor(db: Db, organizationId: string, email: string): Promise<boolean> {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const rows = await db
    .select({ id: organization_domains.id })
    .from(organization_domains)
    .where(
      and(
        eq(organization_domains.organization_id, organizationId),
        eq(organization_domains.domain, domain),
        isNotNull(organization_domains.verified_at),
        ne(organization_domains.sso_enforcement, ''),
      ),
    )
    .limit(1);
  return rows.length > 0;
}
