import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeInvite, makeKey, makeMember, makeProject, makeTenant, makeUser } from '../helpers/factories.js';

const ME = { uuid: '@me' };
const ctx = await buildTestApp(t);
const { call, db } = ctx;

const INVALID = {
  type: 'validation_error',
  code: 'invalid_input',
  detail: 'The provided invite ID is not valid.',
  attr: null,
};
const ACCOUNT_EXISTS = {
  type: 'validation_error',
  code: 'account_exists',
  detail:
    "An account with this email address already exists. Accept the invite with one of that account's personal API " +
    'keys.',
  attr: null,
};
const denied = (detail: string) => ({ type: 'authentication_error', code: 'permission_denied', detail, attr: null });
const EXPIRED = {
  type: 'validation_error',
  code: 'expired',
  detail: 'This invite has expired. Please ask your admin for a new one.',
  attr: null,
};

t.test('signup_retrieve', async (t) => {
  const a = await makeTenant(db, 'Initech');
  const invite = await makeInvite(db, a, undefined, { first_name: 'Peter' });
  const res = await call('signup_retrieve', { params: { invite_id: invite.id } });
  t.equal(res.status, 200);
  t.same(res.body, {
    id: invite.id,
    target_email: invite.target_email,
    first_name: 'Peter',
    organization_name: 'Initech',
  });
  const upper = await call('signup_retrieve', { params: { invite_id: invite.id.toUpperCase() } });
  t.equal(upper.body.id, invite.id, 'the id is case-insensitive like any UUID');
  const withJunkKey = await call('signup_retrieve', { params: { invite_id: invite.id }, key: 'phx_not_a_key' });
  t.equal(withJunkKey.status, 200, 'no key is needed or checked');

  for (const bad of ['00000000-0000-4000-8000-000000000000', 'abc', '1234']) {
    t.same((await call('signup_retrieve', { params: { invite_id: bad } })).body, INVALID, bad);
  }
  const expired = await makeInvite(db, a, undefined, { ageDays: 3.01 });
  t.same((await call('signup_retrieve', { params: { invite_id: expired.id } })).body, EXPIRED);
  const almost = await makeInvite(db, a, undefined, { ageDays: 2.99 });
  t.equal((await call('signup_retrieve', { params: { invite_id: almost.id } })).status, 200, 'valid for 3 days');
});

t.test('signup_create: a new user', async (t) => {
  const a = await makeTenant(db, 'Hooli');
  const second = await makeProject(db, a);
  const invite = await makeInvite(db, a, `richard-${process.pid}@pied.piper`, { level: 8, first_name: 'Richard' });
  const res = await call('signup_create', {
    params: { invite_id: invite.id },
    body: { last_name: 'Hendricks', password: 'ignored' },
  });
  t.equal(res.status, 201);
  const { user, organization, personal_api_key: key } = res.body;
  t.match(user, {
    email: invite.target_email,
    first_name: 'Richard',
    last_name: 'Hendricks',
    organization: { id: a.organization.id, name: 'Hooli', membership_level: 8 },
    team: { id: a.project.id },
  });
  t.same(
    user.organizations.map((o: { id: string }) => o.id),
    [a.organization.id],
  );
  t.not(second.id, user.team.id, 'the organization’s first project becomes current');
  t.same(organization, { id: a.organization.id, name: 'Hooli' });
  t.match(key, { label: 'Invite sign-up', scopes: ['*'], scoped_organizations: [] });
  t.match(key.value, /^phx_[0-9A-Za-z]{40,}$/);

  const me = await call('users_retrieve', { key: key.value, params: ME });
  t.equal(me.body.uuid, user.uuid, 'the key works');
  const members = await call('members_list', {
    key: key.value,
    params: { organization_id: '@current' },
    query: { email: invite.target_email },
  });
  t.match(members.body.results, [{ level: 8, user: { uuid: user.uuid } }]);
  const keys = await call('personal_api_keys_list', { key: key.value });
  t.same(
    keys.body.map((k: { id: string }) => k.id),
    [key.id],
  );
  t.equal(keys.body[0].value, null, 'the value is shown only once');

  t.same(
    (await call('invites_list', { key: a.key, params: { organization_id: a.organization.id } })).body.results,
    [],
    'the invite is used up',
  );
  t.same((await call('signup_retrieve', { params: { invite_id: invite.id } })).body, INVALID);
  t.same((await call('signup_create', { params: { invite_id: invite.id } })).body, INVALID, 'and cannot be used twice');
});

t.test('signup_create: names', async (t) => {
  const a = await makeTenant(db);
  const named = await makeInvite(db, a, undefined, { first_name: 'Monica' });
  const given = await call('signup_create', { params: { invite_id: named.id }, body: { first_name: 'Mon' } });
  t.match(given.body.user, { first_name: 'Mon', last_name: '' }, 'the body wins');
  const plain = await makeInvite(db, a);
  const bare = await call('signup_create', { params: { invite_id: plain.id } });
  t.equal(bare.status, 201, 'no body at all');
  t.match(bare.body.user, { first_name: '', last_name: '' });

  const invite = await makeInvite(db, a);
  t.match(
    (await call('signup_create', { params: { invite_id: invite.id }, body: { first_name: 'x'.repeat(151) } })).body,
    {
      type: 'validation_error',
      code: 'max_length',
      attr: 'first_name',
    },
  );
  t.match((await call('signup_create', { params: { invite_id: invite.id }, body: { last_name: 5 } })).body, {
    attr: 'last_name',
  });
  t.equal(
    (await call('signup_retrieve', { params: { invite_id: invite.id } })).status,
    200,
    'a refused request leaves the invite',
  );
});

t.test('signup_create: an invite id alone never opens an existing account', async (t) => {
  const victim = await makeTenant(db, 'Victim home');
  const attacker = await makeTenant(db, 'Attacker');
  // Anyone who can invite can invite any address, and then holds the invite id.
  const invite = await call('invites_create', {
    key: attacker.key,
    params: { organization_id: attacker.organization.id },
    body: { target_email: victim.user.email, level: 15, send_email: false },
  });
  t.equal(invite.status, 201);
  // The keys as they are, apart from when they were last used (recorded in the background).
  const keys = async () =>
    ((await call('personal_api_keys_list', { key: victim.key })).body as Record<string, unknown>[]).map(
      ({ last_used_at: _, ...k }) => k,
    );
  const keysBefore = await keys();

  const res = await call('signup_create', { params: { invite_id: invite.body.id } });
  t.same(res.body, ACCOUNT_EXISTS);
  t.equal(res.status, 400);
  t.notOk(JSON.stringify(res.body).includes('phx_'), 'no key of the existing account');
  const me = await call('users_retrieve', { key: victim.key, params: ME });
  t.equal(me.body.organization.id, victim.organization.id, 'the current organization did not move');
  t.same(
    me.body.organizations.map((o: { id: string }) => o.id),
    [victim.organization.id],
    'no membership was added',
  );
  t.same(await keys(), keysBefore, 'the keys are as they were');
  t.equal(
    (await call('signup_retrieve', { params: { invite_id: invite.body.id } })).status,
    200,
    'the invite is still there',
  );
  const shouting = await makeInvite(db, attacker, victim.user.email.replace('example.com', 'EXAMPLE.COM'));
  t.same(
    (await call('signup_create', { params: { invite_id: shouting.id } })).body,
    ACCOUNT_EXISTS,
    'whatever the case of the domain',
  );
});

t.test('signup_create: an existing user accepts with their own key', async (t) => {
  const home = await makeTenant(db);
  const a = await makeTenant(db, 'Pied Piper');
  const invite = await makeInvite(db, a, home.user.email, { level: 8 });
  const params = { invite_id: invite.id };
  // The user's own key, warm in the cache before they join.
  t.equal((await call('members_list', { key: home.key, params: { organization_id: a.organization.id } })).status, 403);

  const stranger = await makeTenant(db);
  t.match((await call('signup_create', { params, key: stranger.key })).body, {
    type: 'validation_error',
    code: 'invalid_recipient',
    detail: /^This invite is intended for another email address: u\*+\w@example\.com\. You tried to sign up with /,
  });
  t.equal((await call('signup_create', { params, key: 'phx_not_a_key' })).status, 401);
  const noScope = await makeKey(db, home.user, ['dashboard:write']);
  t.same(
    (await call('signup_create', { params, key: noScope })).body,
    denied("API key missing required scope 'user:write'"),
  );
  const elsewhere = await makeKey(db, home.user, ['*'], { scoped_organizations: [home.organization.id] });
  t.same(
    (await call('signup_create', { params, key: elsewhere })).body,
    denied(`API key does not have access to the requested organization: ID ${a.organization.id}.`),
  );
  const inProject = await makeKey(db, home.user, ['*'], { scoped_teams: [home.project.id] });
  t.equal((await call('signup_create', { params, key: inProject })).status, 403);
  t.equal((await call('signup_retrieve', { params })).status, 200, 'refusals leave the invite');
  const keysBefore = (await call('personal_api_keys_list', { key: home.key })).body;

  const res = await call('signup_create', { params, key: home.key, body: { first_name: 'Ignored' } });
  t.equal(res.status, 200);
  t.match(
    res.body.user,
    { id: home.user.id, first_name: 'Test', organization: { id: a.organization.id, membership_level: 8 } },
    'the same user, now in Pied Piper',
  );
  t.same(
    res.body.user.organizations.map((o: { id: string }) => o.id).sort(),
    [home.organization.id, a.organization.id].sort(),
  );
  t.same(res.body.organization, { id: a.organization.id, name: 'Pied Piper' });
  const own = keysBefore.find((k: { label: string; id: string }) => res.body.personal_api_key.id === k.id)!;
  t.ok(own, 'the answer names the calling key');
  t.same(res.body.personal_api_key, {
    id: own.id,
    label: own.label,
    value: null,
    scopes: ['*'],
    scoped_organizations: [],
  });
  t.same(
    (await call('personal_api_keys_list', { key: home.key })).body.map((k: { id: string }) => k.id),
    keysBefore.map((k: { id: string }) => k.id),
    'no key was minted',
  );
  t.equal(
    (await call('members_list', { key: home.key, params: { organization_id: a.organization.id } })).status,
    200,
    'the key reaches it at once',
  );
  t.same((await call('signup_create', { params, key: home.key })).body, INVALID, 'the invite is used up');

  const forNobody = await makeInvite(db, a);
  t.equal(
    (await call('signup_create', { params: { invite_id: forNobody.id }, key: home.key })).body.code,
    'invalid_recipient',
    'a key never creates another user',
  );
});

t.test('signup_create: refusals leave everything as it was', async (t) => {
  const a = await makeTenant(db);
  const org = { organization_id: a.organization.id };

  const member = await makeMember(db, a, 1);
  const forMember = await makeInvite(db, a, member.user.email);
  t.same((await call('signup_create', { params: { invite_id: forMember.id } })).body, ACCOUNT_EXISTS);
  t.same((await call('signup_create', { params: { invite_id: forMember.id }, key: member.key })).body, {
    type: 'validation_error',
    code: 'user_already_member',
    detail: 'You already are a member of this organization.',
    attr: null,
  });

  const expired = await makeInvite(db, a, undefined, { ageDays: 4 });
  t.same((await call('signup_create', { params: { invite_id: expired.id } })).body, EXPIRED);
  t.equal(
    (await call('members_list', { key: a.key, params: org, query: { email: expired.target_email } })).body.count,
    0,
  );

  const busy = await makeUser(db);
  const busyKey = await makeKey(db, busy);
  for (let i = 0; i < 9; i++) await makeKey(db, busy);
  const forBusy = await makeInvite(db, a, busy.email);
  t.same((await call('signup_create', { params: { invite_id: forBusy.id } })).body, ACCOUNT_EXISTS);
  t.equal(
    (await call('members_list', { key: a.key, params: org, query: { email: busy.email } })).body.count,
    0,
    'not a member',
  );

  t.same((await call('signup_create', { params: { invite_id: 'nope' } })).body, INVALID);
  const invites = await call('invites_list', { key: a.key, params: org });
  t.same(
    invites.body.results.map((i: { id: string }) => i.id).sort(),
    [forMember.id, expired.id, forBusy.id].sort(),
    'every refused invite is still there',
  );
  const joined = await call('signup_create', { params: { invite_id: forBusy.id }, key: busyKey });
  t.equal(joined.status, 200, 'a user with ten keys joins with one of them: no key is minted');
});

t.test('signup_create: one invite, two racing sign-ups', async (t) => {
  const a = await makeTenant(db);
  const invite = await makeInvite(db, a);
  const results = await Promise.all([0, 1].map(() => call('signup_create', { params: { invite_id: invite.id } })));
  t.same(results.map((r) => r.status).sort(), [201, 400]);
  const members = await call('members_list', {
    key: a.key,
    params: { organization_id: a.organization.id },
    query: { email: invite.target_email },
  });
  t.equal(members.body.count, 1, 'one membership');
});
