import t from 'tap';
import { and, eq, sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant, makeUser } from '../helpers/factories.js';
import { addMembership } from '../../src/organizations/queries.js';
import { personal_api_keys, users } from '../../src/db/schema/index.js';

const ME = { uuid: '@me' };
const ctx = await buildTestApp(t);
const { call, db } = ctx;

const denied = (detail: string) => ({ type: 'authentication_error', code: 'permission_denied', detail, attr: null });
const notFound = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };
const EDIT_OTHERS = 'You can only edit others if you are an admin.';
const HIGHER_TARGET = 'You can only edit others with level lower or equal to you.';
const OWN_LEVEL = "You can't change your own access level.";
const MAKE_OWNER = "You can only make another member owner if you're this organization's owner.";
const OWNER_LEAVES = {
  type: 'validation_error',
  code: 'invalid_input',
  detail: 'Cannot leave the organization as its owner!',
  attr: null,
};

t.test('members_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const admin = await makeMember(db, a, 8);
  const member = await makeMember(db, a, 1);
  const inactive = await makeMember(db, a, 1);
  await db.update(users).set({ is_active: false }).where(eq(users.id, inactive.user.id));
  const bot = await makeUser(db, `bot-${a.organization.id.slice(0, 8)}@posthogbot.user`);
  await addMembership(db, a.organization.id, bot.id, 1);
  await makeMember(db, b, 1);

  const res = await call('members_list', { key: a.key, params: org });
  t.equal(res.status, 200);
  t.equal(res.body.count, 3, 'inactive users and bots are left out, other organizations too');
  t.same(
    res.body.results.map((m: { user: { uuid: string } }) => m.user.uuid),
    [member.user.uuid, admin.user.uuid, a.user.uuid],
    'newest first',
  );
  const owner = res.body.results[2];
  t.match(owner, { level: 15, is_2fa_enabled: false, has_social_auth: false });
  t.same(owner.user, {
    id: a.user.id,
    uuid: a.user.uuid,
    distinct_id: a.user.distinct_id,
    first_name: 'Test',
    last_name: 'User',
    email: a.user.email,
    is_email_verified: null,
    hedgehog_config: null,
    role_at_organization: null,
  });

  const oldest = await call('members_list', { key: a.key, params: org, query: { order: 'joined_at' } });
  t.same(
    oldest.body.results.map((m: { level: number }) => m.level),
    [15, 8, 1],
  );
  const unknownOrder = await call('members_list', { key: a.key, params: org, query: { order: 'level' } });
  t.same(
    unknownOrder.body.results.map((m: { level: number }) => m.level),
    [1, 8, 15],
    'any other order is the default',
  );
  const byEmail = await call('members_list', { key: a.key, params: org, query: { email: admin.user.email } });
  t.equal(byEmail.body.count, 1);
  t.equal(byEmail.body.results[0].user.uuid, admin.user.uuid);
  t.equal(
    (await call('members_list', { key: a.key, params: org, query: { email: 'nobody@example.com' } })).body.count,
    0,
  );

  const mark = new Date(Date.now() - 1);
  await new Promise((r) => setTimeout(r, 5));
  await call('members_partial_update', {
    key: a.key,
    params: { ...org, user__uuid: member.user.uuid },
    body: { level: 8 },
  });
  const changed = await call('members_list', {
    key: a.key,
    params: org,
    query: { updated_after: new Date(mark.getTime() + 2).toISOString() },
  });
  t.same(
    changed.body.results.map((m: { user: { uuid: string } }) => m.user.uuid),
    [member.user.uuid],
    'updated_after',
  );
  t.match(await call('members_list', { key: a.key, params: org, query: { updated_after: 'yesterday' } }), {
    status: 400,
    body: { type: 'validation_error', attr: 'updated_after' },
  });

  const page = await call('members_list', {
    key: member.key,
    params: { organization_id: '@current' },
    query: { limit: 1, offset: 1 },
  });
  t.equal(page.status, 200, 'members read');
  t.equal(page.body.results.length, 1);
  t.equal(page.body.next, 'http://localhost/api/organizations/%40current/members/?limit=1&offset=2');
  const past = await call('members_list', { key: member.key, params: org, query: { offset: 99 } });
  t.same([past.body.count, past.body.results], [page.body.count, []], 'a page past the end still counts them all');

  t.equal((await call('members_list', { params: org })).status, 401);
  const orgScope = await makeKey(db, a.user, ['organization:read']);
  t.same(
    (await call('members_list', { key: orgScope, params: org })).body,
    denied("API key missing required scope 'organization_member:read'"),
  );
  const writer = await makeKey(db, a.user, ['organization_member:write']);
  t.equal((await call('members_list', { key: writer, params: org })).status, 200, 'write implies read');
  t.same(
    (await call('members_list', { key: a.key, params: { organization_id: b.organization.id } })).body,
    denied('You do not have permission to perform this action.'),
  );
  t.equal((await call('members_list', { key: a.key, params: { organization_id: 'nope' } })).status, 404);
});

t.test('members_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const at = (user: { uuid: string }) => ({ ...org, user__uuid: user.uuid });

  t.test('an owner changes levels, and the change applies at once', async (t) => {
    const admin = await makeMember(db, a, 8);
    // Warm the admin's cached principal, then demote them.
    t.equal(
      (await call('organizations_partial_update', { key: admin.key, params: { id: a.organization.id }, body: {} }))
        .status,
      200,
    );
    const res = await call('members_partial_update', { key: a.key, params: at(admin.user), body: { level: 1 } });
    t.equal(res.status, 200);
    t.match(res.body, { user: { uuid: admin.user.uuid }, level: 1 });
    t.ok(res.body.updated_at > res.body.joined_at, 'updated_at moves');
    const after = await call('organizations_partial_update', {
      key: admin.key,
      params: { id: a.organization.id },
      body: {},
    });
    t.same(
      after.body,
      denied('Your organization access level is insufficient.'),
      'the demotion reached the key at once',
    );

    const other = await makeMember(db, a, 1);
    t.equal(
      (await call('members_partial_update', { key: a.key, params: at(other.user), body: { level: 15 } })).body.level,
      15,
      'several owners',
    );
    t.equal(
      (await call('members_partial_update', { key: a.key, params: at(other.user), body: { level: 8 } })).body.level,
      8,
      'an owner demotes another',
    );
    const same = await call('members_partial_update', {
      key: a.key,
      params: at(other.user),
      body: { id: 'x', user: {}, joined_at: 'x' },
    });
    t.match(same, { status: 200, body: { level: 8 } }, 'read-only fields are ignored');
  });

  t.test('an administrator', async (t) => {
    const admin = await makeMember(db, a, 8);
    const member = await makeMember(db, a, 1);
    const peer = await makeMember(db, a, 8);
    t.equal(
      (await call('members_partial_update', { key: admin.key, params: at(member.user), body: { level: 8 } })).body
        .level,
      8,
      'promotes to their own level',
    );
    t.equal(
      (await call('members_partial_update', { key: admin.key, params: at(peer.user), body: { level: 1 } })).body.level,
      1,
      'demotes a peer',
    );
    t.same(
      (await call('members_partial_update', { key: admin.key, params: at(member.user), body: { level: 15 } })).body,
      denied(MAKE_OWNER),
    );
    t.same(
      (await call('members_partial_update', { key: admin.key, params: at(a.user), body: { level: 8 } })).body,
      denied(HIGHER_TARGET),
    );
    t.same(
      (await call('members_partial_update', { key: admin.key, params: at(a.user), body: {} })).body,
      denied(HIGHER_TARGET),
    );
    t.same(
      (await call('members_partial_update', { key: admin.key, params: at(admin.user), body: { level: 1 } })).body,
      denied(OWN_LEVEL),
    );
    t.same(
      (await call('members_partial_update', { key: a.key, params: { ...org, user__uuid: '@me' }, body: { level: 8 } }))
        .body,
      denied(OWN_LEVEL),
    );
  });

  t.test('a member', async (t) => {
    const member = await makeMember(db, a, 1);
    const other = await makeMember(db, a, 1);
    t.same(
      (await call('members_partial_update', { key: member.key, params: at(other.user), body: { level: 1 } })).body,
      denied(EDIT_OTHERS),
    );
    t.same(
      (await call('members_partial_update', { key: member.key, params: at(other.user), body: {} })).body,
      denied(EDIT_OTHERS),
    );
    t.same(
      (await call('members_partial_update', { key: member.key, params: at(a.user), body: { level: 15 } })).body,
      denied(EDIT_OTHERS),
      'the admin check comes first',
    );
    t.same(
      (await call('members_partial_update', { key: member.key, params: at(member.user), body: { level: 8 } })).body,
      denied(OWN_LEVEL),
    );
    const self = await call('members_partial_update', {
      key: member.key,
      params: { ...org, user__uuid: '@me' },
      body: {},
    });
    t.match(
      self,
      { status: 200, body: { level: 1, user: { uuid: member.user.uuid } } },
      'nothing to change on oneself is fine',
    );
  });

  t.test('validation, lookup and access', async (t) => {
    const member = await makeMember(db, a, 1);
    t.same((await call('members_partial_update', { key: a.key, params: at(member.user), body: { level: 5 } })).body, {
      type: 'validation_error',
      code: 'invalid_choice',
      detail: '"5" is not a valid choice.',
      attr: 'level',
    });
    t.match(
      (await call('members_partial_update', { key: a.key, params: at(member.user), body: { level: '8' } })).body,
      {
        code: 'invalid_input',
        attr: 'level',
        detail: 'A valid integer is required.',
      },
    );
    const theirs = await makeMember(db, b, 1);
    t.same(
      (await call('members_partial_update', { key: a.key, params: at(theirs.user), body: { level: 8 } })).body,
      notFound,
      'a member of another organization',
    );
    t.same(
      (await call('members_partial_update', { key: a.key, params: { ...org, user__uuid: 'nope' }, body: {} })).body,
      notFound,
    );
    t.equal(
      (
        await call('members_partial_update', {
          key: a.key,
          params: { organization_id: b.organization.id, user__uuid: theirs.user.uuid },
          body: { level: 8 },
        })
      ).status,
      403,
    );
    t.equal((await call('members_partial_update', { params: at(member.user), body: { level: 8 } })).status, 401);
    const readOnly = await makeKey(db, a.user, ['organization_member:read', 'organization:write']);
    t.same(
      (await call('members_partial_update', { key: readOnly, params: at(member.user), body: { level: 8 } })).body,
      denied("API key missing required scope 'organization_member:write'"),
    );
    const list = await call('members_list', { key: a.key, params: org, query: { email: member.user.email } });
    t.equal(list.body.results[0].level, 1, 'nothing changed');
  });
});

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

t.test('members last_login', async (t) => {
  const a = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const member = await makeMember(db, a, 1);
  const find = async (uuid: string) =>
    (await call('members_list', { key: a.key, params: org })).body.results.find(
      (m: { user: { uuid: string } }) => m.user.uuid === uuid,
    )!;
  t.equal((await find(member.user.uuid)).last_login, null, 'never used a key');
  const when = new Date('2026-01-02T03:04:05.000Z');
  const earlier = new Date('2025-06-01T00:00:00.000Z');
  await db.update(personal_api_keys).set({ last_used_at: when }).where(eq(personal_api_keys.user_id, member.user.id));
  await makeKey(db, member.user, ['*']);
  await db
    .update(personal_api_keys)
    .set({ last_used_at: earlier })
    .where(and(eq(personal_api_keys.user_id, member.user.id), sql`${personal_api_keys.last_used_at} is null`));
  t.equal((await find(member.user.uuid)).last_login, when.toISOString(), 'the latest use of any of their keys');
  const patched = await call('members_partial_update', {
    key: a.key,
    params: { ...org, user__uuid: member.user.uuid },
    body: {},
  });
  t.equal(patched.body.last_login, when.toISOString());
});

t.test('members_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const member = await makeMember(db, a, 1);
  const params = { ...org, user__uuid: member.user.uuid };
  const res = await call('members_update', { key: a.key, params, body: { level: 8 } });
  t.equal(res.status, 200);
  t.match(res.body, { level: 8, user: { uuid: member.user.uuid } });
  t.match((await call('members_update', { key: a.key, params, body: {} })).body, { code: 'required', attr: 'level' });
  t.match((await call('members_update', { key: a.key, params, body: { level: 3 } })).body, {
    type: 'validation_error',
    attr: 'level',
  });
  const plain = await makeMember(db, a, 1);
  t.same((await call('members_update', { key: plain.key, params, body: { level: 1 } })).body, denied(EDIT_OTHERS));
  const theirs = await makeMember(db, b, 1);
  t.same(
    (await call('members_update', { key: a.key, params: { ...org, user__uuid: theirs.user.uuid }, body: { level: 8 } }))
      .body,
    notFound,
  );
  t.equal(
    (
      await call('members_update', {
        key: a.key,
        params: { organization_id: b.organization.id, user__uuid: theirs.user.uuid },
        body: { level: 8 },
      })
    ).status,
    403,
  );
  const list = await call('members_list', {
    key: b.key,
    params: { organization_id: b.organization.id },
    query: { email: theirs.user.email },
  });
  t.equal(list.body.results[0].level, 1, "the other organization's member is unchanged");
  t.equal((await call('members_update', { params, body: { level: 1 } })).status, 401);
  const readOnly = await makeKey(db, a.user, ['organization_member:read']);
  t.same(
    (await call('members_update', { key: readOnly, params, body: { level: 1 } })).body,
    denied("API key missing required scope 'organization_member:write'"),
  );
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
