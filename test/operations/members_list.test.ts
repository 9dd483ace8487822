import t from 'tap';
import { and, eq, sql } from 'drizzle-orm';
import { makeKey, makeMember, makeTenant, makeUser } from '../helpers/factories.js';
import { addMembership } from '../../src/organizations/queries.js';
import { personal_api_keys, users } from '../../src/db/schema/index.js';
import { call, db, denied } from '../helpers/members-app.js';

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
