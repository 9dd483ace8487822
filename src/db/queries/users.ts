import { asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { organization_memberships, organizations, users } from '../schema/index.js';
import { randomToken } from '../../tokens.js';
import { prepared } from '../prepared.js';
import { anyOf } from './util.js';

export type UserRow = typeof users.$inferSelect;

export async function getUser(db: Db, id: number): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return row;
}

const usersAmong = prepared('users_among', (db, name) =>
  db.select().from(users).where(anyOf(users.id, sql.placeholder('ids'))).prepare(name),
);

export async function getUsers(db: Db, ids: number[]): Promise<Map<number, UserRow>> {
  if (!ids.length) return new Map();
  const rows = await usersAmong(db).execute({ ids: [...new Set(ids)] });
  return new Map(rows.map((u) => [u.id, u]));
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.email, normalizeEmail(email))).limit(1);
  return row;
}

/** PostHog lower-cases the domain part of an e-mail address. */
export function normalizeEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0 ? email.trim() : `${email.slice(0, at).trim()}@${email.slice(at + 1).trim().toLowerCase()}`;
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
