import t from 'tap';
import { and, eq, sql } from 'drizzle-orm';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { addMembership } from '../../src/organizations/queries.js';
import { personal_api_keys } from '../../src/db/schema/index.js';
import { ME, call, db, denied, notFound, EDIT_OTHERS, HIGHER_TARGET, OWNER_LEAVES } from '../helpers/members-app.js';

t.test('members_destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const at = (user: { uuid: string }) => ({ ...org, user__uuid: user.uuid });

  t.test('removing a member cuts their keys off at once', async (t) => {
    const admin = await makeMember(db, a, 8);
    const member = await makeMember(db, a, 1);
    t.equal((await call('members_list', { key: member.key, params: org })).status, 200, 'the key is warm in the cache');
    const res = await call('members_destroy', { key: admin.key, params: at(member.user) });
    t.equal(res.status, 204);
    t.equal(res.raw, '');
    t.same(
      (await call('members_list', { key: member.key, params: org })).body,
      denied('You do not have permission to perform this action.'),
    );
    t.equal((await call('organizations_retrieve', { key: member.key, params: { id: a.organization.id } })).status, 404);
    t.equal((await call('projects_retrieve', { key: member.key, params: { id: a.project.id } })).status, 404);
    t.same((await call('members_destroy', { key: admin.key, params: at(member.user) })).body, notFound, 'gone');
    const peer = await makeMember(db, a, 8);
    t.equal(
      (await call('members_destroy', { key: admin.key, params: at(peer.user) })).status,
      204,
      'an administrator removes a peer',
    );
  });

  t.test('refusals', async (t) => {
    const admin = await makeMember(db, a, 8);
    const member = await makeMember(db, a, 1);
    const other = await makeMember(db, a, 1);
    t.same((await call('members_destroy', { key: member.key, params: at(other.user) })).body, denied(EDIT_OTHERS));
    t.same((await call('members_destroy', { key: admin.key, params: at(a.user) })).body, denied(HIGHER_TARGET));
    t.same(
      (await call('members_destroy', { key: a.key, params: at(a.user) })).body,
      OWNER_LEAVES,
      'an owner cannot leave',
    );
    t.same((await call('members_destroy', { key: a.key, params: { ...org, user__uuid: '@me' } })).body, OWNER_LEAVES);
    const coOwner = await makeMember(db, a, 15);
    t.same(
      (await call('members_destroy', { key: a.key, params: at(coOwner.user) })).body,
      OWNER_LEAVES,
      'nor be removed: demote first',
    );
    t.equal(
      (await call('members_partial_update', { key: a.key, params: at(coOwner.user), body: { level: 8 } })).status,
      200,
    );
    t.equal((await call('members_destroy', { key: a.key, params: at(coOwner.user) })).status, 204);

    const theirs = await makeMember(db, b, 1);
    t.same((await call('members_destroy', { key: a.key, params: at(theirs.user) })).body, notFound);
    t.same((await call('members_destroy', { key: a.key, params: { ...org, user__uuid: 'x' } })).body, notFound);
    t.equal(
      (
        await call('members_destroy', {
          key: a.key,
          params: { organization_id: b.organization.id, user__uuid: theirs.user.uuid },
        })
      ).status,
      403,
    );
    t.equal((await call('members_destroy', { params: at(other.user) })).status, 401);
    const readOnly = await makeKey(db, admin.user, ['organization_member:read']);
    t.same(
      (await call('members_destroy', { key: readOnly, params: at(other.user) })).body,
      denied("API key missing required scope 'organization_member:write'"),
    );
    t.equal(
      (await call('members_list', { key: a.key, params: org, query: { email: other.user.email } })).body.count,
      1,
      'still there',
    );
  });

  t.test('anyone but an owner may leave', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    t.equal((await call('users_retrieve', { key: member.key, params: ME })).body.organization.id, a.organization.id);
    t.equal(
      (await call('members_destroy', { key: member.key, params: { organization_id: '@current', user__uuid: '@me' } }))
        .status,
      204,
    );
    const me = await call('users_retrieve', { key: member.key, params: ME });
    t.equal(me.body.organization, null, 'no current organization left');
    t.same(me.body.organizations, []);
    t.equal((await call('members_destroy', { key: admin.key, params: at(admin.user) })).status, 204);
    t.equal((await call('members_list', { key: admin.key, params: org })).status, 403);
  });
});

t.test('members_scoped_api_keys_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const member = await makeMember(db, a, 1, ['organization_member:read']);
  const params = { ...org, user__uuid: member.user.uuid };
  await addMembership(db, b.organization.id, member.user.id, 1);
  await makeKey(db, member.user, ['*'], { scoped_organizations: [b.organization.id] });
  await makeKey(db, member.user, ['*'], { scoped_teams: [b.project.id] });
  const none = await call('members_scoped_api_keys_retrieve', { key: a.key, params });
  t.equal(none.status, 200);
  t.same(none.body.keys.length, 1, "only the member's unscoped key reaches this organization");
  t.equal(none.body.has_keys, true);

  const projectKey = await makeKey(db, member.user, ['*'], { scoped_teams: [a.project.id] });
  await makeKey(db, member.user, ['*'], { scoped_organizations: [a.organization.id] });
  await db
    .update(personal_api_keys)
    .set({ last_used_at: new Date(Date.now() - 14 * 86_400_000) })
    .where(eq(personal_api_keys.user_id, member.user.id));
  const asker = await makeMember(db, a, 1, ['organization_member:read']);
  const res = await call('members_scoped_api_keys_retrieve', {
    key: asker.key,
    params: { organization_id: '@current', user__uuid: a.user.uuid },
  });
  t.equal(res.status, 200, "any member may ask about another member's keys");
  t.match(res.body, { has_keys: true, keys: [{ name: String, last_used_at: String }] });
  const mine = await call('members_scoped_api_keys_retrieve', { key: a.key, params });
  t.equal(mine.body.keys.length, 3, 'unscoped, scoped to the organization, scoped to one of its projects');
  t.equal(mine.body.has_keys_active_last_week, false, 'used two weeks ago');
  t.notOk(JSON.stringify(mine.body).includes(projectKey), 'never a key value');
  await db
    .update(personal_api_keys)
    .set({ last_used_at: new Date() })
    .where(
      and(eq(personal_api_keys.user_id, member.user.id), sql`${a.project.id} = any(${personal_api_keys.scoped_teams})`),
    );
  t.equal(
    (await call('members_scoped_api_keys_retrieve', { key: a.key, params })).body.has_keys_active_last_week,
    true,
  );

  const fresh = await makeMember(db, a, 1);
  await db.delete(personal_api_keys).where(eq(personal_api_keys.user_id, fresh.user.id));
  t.same(
    (await call('members_scoped_api_keys_retrieve', { key: a.key, params: { ...org, user__uuid: fresh.user.uuid } }))
      .body,
    {
      has_keys: false,
      has_keys_active_last_week: false,
      keys: [],
    },
  );
  const theirs = await makeMember(db, b, 1);
  t.same(
    (await call('members_scoped_api_keys_retrieve', { key: a.key, params: { ...org, user__uuid: theirs.user.uuid } }))
      .body,
    notFound,
  );
  t.equal(
    (
      await call('members_scoped_api_keys_retrieve', {
        key: a.key,
        params: { organization_id: b.organization.id, user__uuid: theirs.user.uuid },
      })
    ).status,
    403,
  );
  t.equal((await call('members_scoped_api_keys_retrieve', { params })).status, 401);
  const noScope = await makeKey(db, a.user, ['organization:read']);
  t.same(
    (await call('members_scoped_api_keys_retrieve', { key: noScope, params })).body,
    denied("API key missing required scope 'organization_member:read'"),
  );
});
