import t from 'tap';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import {
  call,
  db,
  denied,
  notFound,
  EDIT_OTHERS,
  HIGHER_TARGET,
  OWN_LEVEL,
  MAKE_OWNER,
} from '../helpers/members-app.js';

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

t.test('members_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const member = await makeMember(db, a, 1);
  const params = { ...org, user__uuid: member.user.uuid };
  const res = await call('members_update', { key: a.key, params, body: { level: 8 } });
  t.equal(res.status, 200);
  t.match(res.body, { level: 8, user: { uuid: member.user.uuid } });
  // As PostHog's PUT: `level` has a model default, so it is not required and a body without it changes nothing.
  const unchanged = await call('members_update', { key: a.key, params, body: {} });
  t.match(unchanged, { status: 200, body: { level: 8, user: { uuid: member.user.uuid } } });
  t.match((await call('members_update', { key: a.key, params, body: { level: 3 } })).body, {
    type: 'validation_error',
    attr: 'level',
  });
  const plain = await makeMember(db, a, 1);
  t.same((await call('members_update', { key: plain.key, params, body: { level: 1 } })).body, denied(EDIT_OTHERS));
  t.same((await call('members_update', { key: plain.key, params, body: {} })).body, denied(EDIT_OTHERS), 'nor empty');
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
