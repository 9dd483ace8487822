import { and, desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { organization_invites, organization_memberships, organizations, projects, users } from '../db/schema/index.js';
import type { InviteProjectAccess } from '../db/schema/index.js';
import type { Page } from '../core/paging.js';
import { countWhere } from '../db/queries/util.js';

export type InviteRow = typeof organization_invites.$inferSelect;
export type InviteInput = Pick<
  InviteRow,
  'target_email' | 'first_name' | 'level' | 'message' | 'private_project_access' | 'emailing_attempt_made'
>;

/** Invites stay valid this many days (PostHog's INVITE_DAYS_VALIDITY). */
export const INVITE_DAYS_VALIDITY = 3;
const VALIDITY_MS = INVITE_DAYS_VALIDITY * 24 * 3600 * 1000;

export function isExpired(invite: Pick<InviteRow, 'created_at'>, now = Date.now()): boolean {
  return invite.created_at.getTime() < now - VALIDITY_MS;
}

const sameEmail = (email: string) => sql`lower(${organization_invites.target_email}) = lower(${email})`;

export async function listInvites(
  db: Db,
  organizationId: string,
  page: Page,
): Promise<{ count: number; rows: InviteRow[] }> {
  const where = eq(organization_invites.organization_id, organizationId);
  const [count, rows] = await Promise.all([
    countWhere(db, organization_invites, where),
    db
      .select()
      .from(organization_invites)
      .where(where)
      .orderBy(desc(organization_invites.created_at), desc(organization_invites.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

export async function isMemberEmail(db: Db, organizationId: string, email: string): Promise<boolean> {
  const rows = await db
    .select({ id: organization_memberships.id })
    .from(organization_memberships)
    .innerJoin(users, eq(users.id, organization_memberships.user_id))
    .where(
      and(eq(organization_memberships.organization_id, organizationId), sql`lower(${users.email}) = lower(${email})`),
    )
    .limit(1);
  return rows.length > 0;
}

export async function organizationProjectIds(db: Db, organizationId: string): Promise<Set<number>> {
  const rows = await db.select({ id: projects.id }).from(projects).where(eq(projects.organization_id, organizationId));
  return new Set(rows.map((r) => r.id));
}

export interface NewInvite extends InviteInput {
  /** Keep the highest level and project access of the address's unexpired pending invites. */
  combine: boolean;
}

/**
 * Creates invites in one transaction. Each replaces every earlier invite for the same address in the
 * organization, as PostHog does, so re-inviting leaves exactly one. Combining takes over an earlier
 * invite's level only up to `creatorLevel`, the creator's own: otherwise a member could merge an
 * administrator's pending invite into one of a level they do not hold (PostHog does not cap it).
 */
export async function replaceInvites(
  db: Db,
  organizationId: string,
  createdBy: number,
  creatorLevel: number,
  invites: NewInvite[],
): Promise<InviteRow[]> {
  return db.transaction(async (tx) => {
    const created: InviteRow[] = [];
    for (const { combine, ...input } of invites) {
      const values = { ...input };
      const previous = await tx
        .delete(organization_invites)
        .where(and(eq(organization_invites.organization_id, organizationId), sameEmail(input.target_email)))
        .returning();
      if (combine) {
        for (const old of previous.filter((p) => !isExpired(p))) {
          values.level = Math.max(values.level, Math.min(old.level, creatorLevel));
          values.private_project_access = mergeAccess(values.private_project_access, old.private_project_access);
        }
      }
      const [row] = await tx
        .insert(organization_invites)
        .values({ ...values, organization_id: organizationId, created_by_id: createdBy })
        .returning();
      created.push(row!);
    }
    return created;
  });
}

/** Project access of two invites together, the higher level winning per project. */
function mergeAccess(a: InviteProjectAccess[] | null, b: InviteProjectAccess[] | null): InviteProjectAccess[] | null {
  if (!a?.length && !b?.length) return a ?? b;
  const byId = new Map<number, number>();
  for (const item of [...(a ?? []), ...(b ?? [])]) byId.set(item.id, Math.max(byId.get(item.id) ?? 0, item.level));
  return [...byId].map(([id, level]) => ({ id, level }));
}

export async function deleteInvite(db: Db, organizationId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(organization_invites)
    .where(and(eq(organization_invites.organization_id, organizationId), eq(organization_invites.id, id)))
    .returning({ id: organization_invites.id });
  return rows.length > 0;
}

/** Any organization's invite by id, with its organization's name: the sign-up routes have no tenant. */
export async function getInviteWithOrganization(
  db: Db,
  id: string,
): Promise<{ invite: InviteRow; organization_name: string } | undefined> {
  const [row] = await db
    .select({ invite: organization_invites, organization_name: organizations.name })
    .from(organization_invites)
    .innerJoin(organizations, eq(organizations.id, organization_invites.organization_id))
    .where(eq(organization_invites.id, id))
    .limit(1);
  return row;
}
