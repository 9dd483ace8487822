import type { components } from '../../generated/api.js';
import type { Page } from '../core/paging.js';
import type { Db } from '../db/client.js';
import { lastKeyUse, listMembers, type MemberFilter, type MemberRow } from './queries.js';
import { serializeMember } from './serialize.js';

type Member = components['schemas']['OrganizationMember'];

/** A page of the organization's members, each with their last key use, read in one statement. */
export async function presentMemberPage(
  db: Db,
  organizationId: string,
  filter: MemberFilter,
  page: Page,
): Promise<{ count: number; results: Member[] }> {
  const { count, rows } = await listMembers(db, organizationId, filter, page);
  return { count, results: rows.map((r) => serializeMember(r, r.last_key_use ?? undefined)) };
}

/** Members already loaded, with one look-up of their last key use. */
export async function presentMembers(db: Db, rows: MemberRow[]): Promise<Member[]> {
  const lastUse = await lastKeyUse(
    db,
    rows.map((r) => r.user.id),
  );
  return rows.map((r) => serializeMember(r, lastUse.get(r.user.id)));
}
