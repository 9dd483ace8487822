import { and, asc, desc, eq, gt, inArray, max, notLike, or, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { organization_memberships, organizations, personal_api_keys, projects, users } from '../db/schema/index.js';
import { userBasicColumns, type UserBasicRow, type UserRow } from '../users/queries.js';
import { prepared } from '../db/prepared.js';
import type { Page } from '../core/paging.js';

export type MembershipRow = typeof organization_memberships.$inferSelect;
export interface MemberRow {
  membership: MembershipRow;
  user: UserRow;
}

const BOT_EMAIL_SUFFIX = '@posthogbot.user';

export interface MemberFilter {
  email?: string;
  updated_after?: Date;
  ascending?: boolean;
}

/** Active, human members of one organization. */
function memberConditions(organizationId: string | Placeholder, filter: MemberFilter): SQL[] {
  const conditions: SQL[] = [
    eq(organization_memberships.organization_id, organizationId),
    eq(users.is_active, true),
    notLike(users.email, `%${BOT_EMAIL_SUFFIX}`),
  ];
  if (filter.email !== undefined) conditions.push(eq(users.email, filter.email));
  if (filter.updated_after) conditions.push(gt(organization_memberships.updated_at, filter.updated_after));
  return conditions;
}

/**
 * The page and its total. The total is a window count over every matching member, unless `total` says
 * how to read it without counting.
 */
function memberQueries(
  db: Db,
  where: SQL | undefined,
  ascending: boolean,
  limit: number | Placeholder,
  offset: number | Placeholder,
  total: SQL<number> = sql<number>`count(*) over ()`,
) {
  // The organization's memberships in this order are an index (organization_id, joined_at, id).
  const order = ascending
    ? [asc(organization_memberships.joined_at), asc(organization_memberships.id)]
    : [desc(organization_memberships.joined_at), desc(organization_memberships.id)];
  return {
    count: db
      .select({ n: sql<number>`count(*)::int` })
      .from(organization_memberships)
      .innerJoin(users, eq(users.id, organization_memberships.user_id))
      .where(where),
    page: db
      .select({
        membership: organization_memberships,
        user: userBasicColumns,
        total: total.mapWith(Number),
        last_key_use: sql<Date | null>`(select max(k.last_used_at) from ${personal_api_keys} k
          where k.user_id = "users"."id")`.mapWith(personal_api_keys.last_used_at),
      })
      .from(organization_memberships)
      .innerJoin(users, eq(users.id, organization_memberships.user_id))
      .where(where)
      .orderBy(...order)
      .limit(limit)
      .offset(offset),
  };
}

// The unfiltered listing, newest or oldest first, is the one clients page through: built once. Its
// total is the organization's member count, which triggers keep (drizzle/0017) by the same rule as
// memberConditions, so a page reads its members off the index and counts none of the others.
const unfiltered = [false, true].map((ascending) =>
  prepared(`members_${ascending ? 'asc' : 'desc'}`, (db, name) => {
    const q = memberQueries(
      db,
      and(...memberConditions(sql.placeholder('org'), {})),
      ascending,
      sql.placeholder('limit'),
      sql.placeholder('offset'),
      sql<number>`(select ${organizations.member_count} from ${organizations}
        where ${organizations.id} = ${sql.placeholder('org')})`,
    );
    // A page past the end has no row to carry the total: it reads the kept count on its own.
    const count = db
      .select({ n: organizations.member_count })
      .from(organizations)
      .where(eq(organizations.id, sql.placeholder('org')));
    return { count: count.prepare(`${name}_count`), page: q.page.prepare(`${name}_page`) };
  }),
);

/** A listed member, with when their personal API keys were last used (the nearest thing to a login here). */
export interface ListedMember {
  membership: MembershipRow;
  user: UserBasicRow;
  last_key_use: Date | null;
}

/**
 * One statement per page: the members, the total (a window count) and each one's last key use. Only
 * a page past the end, which has no row to carry the total, counts on its own.
 */
export async function listMembers(
  db: Db,
  organizationId: string,
  filter: MemberFilter,
  page: Page,
): Promise<{ count: number; rows: ListedMember[] }> {
  let rows: (ListedMember & { total: number })[];
  let count: () => Promise<{ n: number }[]>;
  if (filter.email === undefined && !filter.updated_after) {
    const q = unfiltered[filter.ascending ? 1 : 0]!(db);
    const values = { org: organizationId, limit: page.limit, offset: page.offset };
    rows = await q.page.execute(values);
    count = () => q.count.execute(values);
  } else {
    const q = memberQueries(
      db,
      and(...memberConditions(organizationId, filter)),
      Boolean(filter.ascending),
      page.limit,
      page.offset,
    );
    rows = await q.page;
    count = async () => q.count;
  }
  if (!rows.length && page.offset > 0) return { count: (await count())[0]?.n ?? 0, rows: [] };
  return { count: rows[0]?.total ?? 0, rows };
}

/** A member of the organization by user uuid, bots excluded as in the list. */
export async function getMemberByUserUuid(
  db: Db,
  organizationId: string,
  userUuid: string,
): Promise<MemberRow | undefined> {
  const [row] = await db
    .select({ membership: organization_memberships, user: users })
    .from(organization_memberships)
    .innerJoin(users, eq(users.id, organization_memberships.user_id))
    .where(
      and(
        eq(organization_memberships.organization_id, organizationId),
        eq(users.uuid, userUuid),
        notLike(users.email, `%${BOT_EMAIL_SUFFIX}`),
      ),
    )
    .limit(1);
  return row;
}

export async function getMembership(
  db: Db,
  organizationId: string,
  userId: number,
): Promise<MembershipRow | undefined> {
  const [row] = await db
    .select()
    .from(organization_memberships)
    .where(
      and(eq(organization_memberships.organization_id, organizationId), eq(organization_memberships.user_id, userId)),
    )
    .limit(1);
  return row;
}

export async function setMemberLevel(
  db: Db,
  organizationId: string,
  membershipId: string,
  level: number,
): Promise<MembershipRow | undefined> {
  // In a transaction of its own: a change of who may do what invalidates the auth caches before it returns.
  const [row] = await db.transaction((tx) =>
    tx
      .update(organization_memberships)
      .set({ level, updated_at: sql`now()` })
      .where(
        and(
          eq(organization_memberships.id, membershipId),
          eq(organization_memberships.organization_id, organizationId),
        ),
      )
      .returning(),
  );
  return row;
}

/** Removes a membership; the user's current organization and project move off it, as PostHog's leave does. */
export async function removeMember(db: Db, organizationId: string, userId: number): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .delete(organization_memberships)
      .where(
        and(eq(organization_memberships.organization_id, organizationId), eq(organization_memberships.user_id, userId)),
      );
    await tx
      .update(users)
      .set({ current_organization_id: null })
      .where(and(eq(users.id, userId), eq(users.current_organization_id, organizationId)));
    await tx
      .update(users)
      .set({ current_team_id: null })
      .where(
        and(
          eq(users.id, userId),
          inArray(
            users.current_team_id,
            tx.select({ id: projects.id }).from(projects).where(eq(projects.organization_id, organizationId)),
          ),
        ),
      );
  });
}

/** When each user's personal API keys were last used: the nearest thing to a login this server has. */
export async function lastKeyUse(db: Db, userIds: number[]): Promise<Map<number, Date>> {
  if (!userIds.length) return new Map();
  const rows = await db
    .select({ user_id: personal_api_keys.user_id, last: max(personal_api_keys.last_used_at) })
    .from(personal_api_keys)
    .where(inArray(personal_api_keys.user_id, [...new Set(userIds)]))
    .groupBy(personal_api_keys.user_id);
  return new Map(rows.filter((r) => r.last).map((r) => [r.user_id, r.last!]));
}

/**
 * A user's keys that can act on the organization (PostHog's get_scoped_api_keys): unscoped keys,
 * keys scoped to it, and keys scoped to one of its projects. Newest first.
 */
export async function keysReachingOrganization(db: Db, organizationId: string, userId: number) {
  const projectIds = db.select({ id: projects.id }).from(projects).where(eq(projects.organization_id, organizationId));
  return db
    .select({ label: personal_api_keys.label, last_used_at: personal_api_keys.last_used_at })
    .from(personal_api_keys)
    .where(
      and(
        eq(personal_api_keys.user_id, userId),
        or(
          sql`${organizationId} = any(${personal_api_keys.scoped_organizations})`,
          sql`${personal_api_keys.scoped_teams} && array(${projectIds})`,
          and(
            sql`coalesce(cardinality(${personal_api_keys.scoped_organizations}), 0) = 0`,
            sql`coalesce(cardinality(${personal_api_keys.scoped_teams}), 0) = 0`,
          ),
        ),
      ),
    )
    .orderBy(desc(personal_api_keys.created_at));
}
