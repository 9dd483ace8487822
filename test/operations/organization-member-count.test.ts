// An organization's member_count is kept by triggers (drizzle/0017) rather than counted on each read:
// after every kind of write that can change it, the answer equals a count of the memberships by the
// contract's rule (active users, PostHog's bots left out), concurrent joins included.
import { eq, sql } from 'drizzle-orm';
import t, { type Test } from 'tap';
import { users } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeInvite, makeMember, makeTenant, type Tenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

/** The count by its definition, straight from the memberships. */
async function counted(organizationId: string): Promise<number> {
  const rows = await db.execute(sql`select count(*)::int as n from organization_memberships m
    join users u on u.id = m.user_id
    where m.organization_id = ${organizationId} and u.is_active and u.email not like '%@posthogbot.user'`);
  return (rows as unknown as { n: number }[])[0]!.n;
}

/** member_count as the organization retrieve and the organizations list answer it, checked against the count. */
async function memberCount(t: Test, tenant: Tenant, expected: number, what: string): Promise<void> {
  const params = { id: tenant.organization.id };
  const one = await call('organizations_retrieve', { key: tenant.key, params });
  const list = await call('organizations_list', { key: tenant.key });
  const listed = list.body.results.find((o: { id: string }) => o.id === tenant.organization.id);
  t.same(
    { retrieve: one.body.member_count, list: listed?.member_count, counted: await counted(tenant.organization.id) },
    { retrieve: expected, list: expected, counted: expected },
    what,
  );
}

t.test('member_count follows every change of who counts', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  await memberCount(t, a, 1, 'the owner alone');

  // Ten invitees join at once: each join recounts under the organization's row lock.
  const invites = await Promise.all(Array.from({ length: 10 }, () => makeInvite(db, a)));
  const joined = await Promise.all(
    invites.map((invite) => call('signup_create', { params: { invite_id: invite.id }, body: {} })),
  );
  t.same(
    joined.map((r) => r.status),
    Array(10).fill(201),
  );
  await memberCount(t, a, 11, 'ten concurrent joins, all counted');
  await memberCount(t, b, 1, 'another organization is untouched');

  const admin = await makeMember(db, a, 8);
  const member = await makeMember(db, a, 1);
  await memberCount(t, a, 13, 'members added directly');

  const removed = await call('members_destroy', {
    key: admin.key,
    params: { organization_id: a.organization.id, user__uuid: member.user.uuid },
  });
  t.equal(removed.status, 204);
  await memberCount(t, a, 12, 'a member removed');

  await db.update(users).set({ is_active: false }).where(eq(users.id, admin.user.id));
  await memberCount(t, a, 11, 'a user deactivated');
  await db.update(users).set({ is_active: true }).where(eq(users.id, admin.user.id));
  await memberCount(t, a, 12, 'and active again');

  await db
    .update(users)
    .set({ email: `helper-${admin.user.id}@posthogbot.user` })
    .where(eq(users.id, admin.user.id));
  await memberCount(t, a, 11, "a user turned into one of PostHog's bots");

  // A user in both organizations: deleting the user recounts each.
  const both = await makeMember(db, a, 1);
  await db.execute(
    sql`insert into organization_memberships (organization_id, user_id) values (${b.organization.id}, ${both.user.id})`,
  );
  await memberCount(t, a, 12, 'a user of two organizations, in the first');
  await memberCount(t, b, 2, 'and in the second');
  await db.delete(users).where(eq(users.id, both.user.id));
  await memberCount(t, a, 11, 'the user deleted: the first recounted');
  await memberCount(t, b, 1, 'and the second');

  // Moving a membership to another organization recounts both.
  await db.execute(
    sql`update organization_memberships set organization_id = ${b.organization.id}
        where organization_id = ${a.organization.id} and user_id = (select user_id from organization_memberships
          where organization_id = ${a.organization.id} and level = 1 order by user_id limit 1)`,
  );
  await memberCount(t, a, 10, 'a membership moved out');
  await memberCount(t, b, 2, 'and in');
});

t.test('an organization deleted with its members leaves nothing behind', async (t) => {
  const c = await makeTenant(db);
  await makeMember(db, c, 1);
  const res = await call('organizations_destroy', { key: c.key, params: { id: c.organization.id } });
  t.equal(res.status, 204);
  t.equal(await counted(c.organization.id), 0);
});
