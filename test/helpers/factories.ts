import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import { addMembership, createOrganization } from '../../src/organizations/queries.js';
import { createKey } from '../../src/personal-api-keys/queries.js';
import { insertProject } from '../../src/projects/queries.js';
import { createUser, type UserRow } from '../../src/users/queries.js';
import type { OrganizationRow } from '../../src/organizations/queries.js';
import type { ProjectRow } from '../../src/projects/queries.js';
import type { InviteRow } from '../../src/invites/queries.js';
import { organization_invites } from '../../src/db/schema/index.js';

export interface Tenant {
  user: UserRow;
  organization: OrganizationRow;
  project: ProjectRow;
  /** A key with every scope for `user`, the organization's owner. */
  key: string;
}

const unique = () => randomBytes(4).toString('hex');

export async function makeUser(db: Db, email = `user-${unique()}@example.com`): Promise<UserRow> {
  return createUser(db, { email, first_name: 'Test', last_name: 'User' });
}

export async function makeKey(
  db: Db,
  user: UserRow,
  scopes: string[] = ['*'],
  scoping: { scoped_teams?: number[]; scoped_organizations?: string[] } = {},
): Promise<string> {
  const { value } = await createKey(db, user.id, { label: `key ${unique()}`, scopes, ...scoping });
  return value;
}

/** An organization with its owner, first project, and an all-scopes key: each test makes its own. */
export async function makeTenant(db: Db, name = `Org ${unique()}`): Promise<Tenant> {
  const user = await makeUser(db);
  const { organization, project } = await createOrganization(db, { name }, user.id);
  return { user, organization, project, key: await makeKey(db, user) };
}

/** Another user in `tenant`'s organization at `level`, with a key holding `scopes`. */
export async function makeMember(
  db: Db,
  tenant: Tenant,
  level: 1 | 8 | 15 = 1,
  scopes: string[] = ['*'],
): Promise<{ user: UserRow; key: string }> {
  const user = await makeUser(db);
  await addMembership(db, tenant.organization.id, user.id, level);
  return { user, key: await makeKey(db, user, scopes) };
}

export async function makeProject(db: Db, tenant: Tenant, name = `Project ${unique()}`): Promise<ProjectRow> {
  return insertProject(db, tenant.organization.id, { name });
}

/** A pending invite to `tenant`'s organization, sent by its owner; `ageDays` backdates it. */
export async function makeInvite(
  db: Db,
  tenant: Tenant,
  email = `invitee-${unique()}@example.com`,
  { level = 1, ageDays = 0, first_name = '' }: { level?: number; ageDays?: number; first_name?: string } = {},
): Promise<InviteRow> {
  const [row] = await db
    .insert(organization_invites)
    .values({
      organization_id: tenant.organization.id,
      target_email: email,
      first_name,
      level,
      created_by_id: tenant.user.id,
      created_at: new Date(Date.now() - ageDays * 86_400_000),
    })
    .returning();
  return row!;
}
