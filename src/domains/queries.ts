import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { organization_domains } from '../db/schema/index.js';
import type { Page } from '../core/paging.js';
import { countWhere } from '../db/queries/util.js';
import { sqlState } from '../core/sql-state.js';

export type DomainRow = typeof organization_domains.$inferSelect;
export type DomainInput = Partial<
  Pick<DomainRow, 'jit_provisioning_enabled' | 'sso_enforcement' | 'saml_entity_id' | 'saml_acs_url' | 'saml_x509_cert'>
>;

/** PostHog's secrets.token_urlsafe(32): 43 characters of [A-Za-z0-9_-]. */
export function newVerificationChallenge(): string {
  return randomBytes(32).toString('base64url');
}

export async function listDomains(
  db: Db,
  organizationId: string,
  page: Page,
): Promise<{ count: number; rows: DomainRow[] }> {
  const where = eq(organization_domains.organization_id, organizationId);
  const [count, rows] = await Promise.all([
    countWhere(db, organization_domains, where),
    db
      .select()
      .from(organization_domains)
      .where(where)
      // Byte order, whatever the database's collation.
      .orderBy(sql`${organization_domains.domain} collate "C"`)
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

export async function getDomain(db: Db, organizationId: string, id: string): Promise<DomainRow | undefined> {
  const [row] = await db
    .select()
    .from(organization_domains)
    .where(and(eq(organization_domains.organization_id, organizationId), eq(organization_domains.id, id)))
    .limit(1);
  return row;
}

export async function domainTaken(db: Db, domain: string): Promise<boolean> {
  const rows = await db
    .select({ id: organization_domains.id })
    .from(organization_domains)
    .where(eq(organization_domains.domain, domain))
    .limit(1);
  return rows.length > 0;
}

/** Inserts a domain; undefined when another organization (or this one) already has it. */
export async function insertDomain(
  db: Db,
  organizationId: string,
  input: DomainInput & { domain: string },
): Promise<DomainRow | undefined> {
  try {
    const [row] = await db
      .insert(organization_domains)
      .values({ ...input, organization_id: organizationId, verification_challenge: newVerificationChallenge() })
      .returning();
    return row;
  } catch (err) {
    if (sqlState(err) === '23505') return undefined;
    throw err;
  }
}

export async function updateDomain(
  db: Db,
  organizationId: string,
  id: string,
  input: DomainInput,
): Promise<DomainRow | undefined> {
  if (!Object.keys(input).length) return getDomain(db, organizationId, id);
  const [row] = await db
    .update(organization_domains)
    .set(input)
    .where(and(eq(organization_domains.organization_id, organizationId), eq(organization_domains.id, id)))
    .returning();
  return row;
}

/** Records a verification attempt: success sets `verified_at`, failure `last_verification_retry`. */
export async function recordVerification(
  db: Db,
  organizationId: string,
  id: string,
  verified: boolean,
): Promise<DomainRow | undefined> {
  const [row] = await db
    .update(organization_domains)
    .set(
      verified ? { verified_at: sql`now()`, last_verification_retry: null } : { last_verification_retry: sql`now()` },
    )
    .where(and(eq(organization_domains.organization_id, organizationId), eq(organization_domains.id, id)))
    .returning();
  return row;
}

export async function deleteDomain(db: Db, organizationId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(organization_domains)
    .where(and(eq(organization_domains.organization_id, organizationId), eq(organization_domains.id, id)))
    .returning({ id: organization_domains.id });
  return rows.length > 0;
}
