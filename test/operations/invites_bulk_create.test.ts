import t from 'tap';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import {
  SITE,
  smtp,
  call,
  db,
  missingScope,
  HIGHER_INVITE,
  ALREADY_MEMBER,
  TEAM_MISSING,
  email,
  mailTo,
} from '../helpers/invites-app.js';

t.test('invites_bulk_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const count = async () => (await call('invites_list', { key: a.key, params: org })).body.count;

  const targets = [email('bulk'), email('bulk')];
  const before = smtp.messages.length;
  const res = await call('invites_bulk_create', {
    key: a.key,
    params: org,
    body: [{ target_email: targets[0] }, { target_email: targets[1], level: 8, first_name: 'Ada' }],
  });
  t.equal(res.status, 201);
  t.same(
    res.body.map((i: { target_email: string }) => i.target_email),
    targets,
    'in the order given',
  );
  t.match(res.body[1], { level: 8, first_name: 'Ada', emailing_attempt_made: true });
  await smtp.waitFor(before + 2);
  for (const [i, target] of targets.entries()) {
    t.ok(
      mailTo(target)[0]?.mail.text?.includes(`${SITE}/signup/${res.body[i]!.id}`),
      `e-mail with the link to ${target}`,
    );
  }
  t.same(
    (await call('invites_bulk_create', { key: a.key, params: org, body: [] })).body,
    [],
    'an empty array creates nothing',
  );

  t.test('all or nothing', async (t) => {
    const member = await makeMember(db, a, 1);
    const start = await count();
    t.same(
      (
        await call('invites_bulk_create', {
          key: a.key,
          params: org,
          body: [{ target_email: email() }, { target_email: member.user.email }],
        })
      ).body,
      ALREADY_MEMBER,
    );
    t.same(
      (
        await call('invites_bulk_create', {
          key: a.key,
          params: org,
          body: [{ target_email: email() }, { target_email: 'bad' }],
        })
      ).body,
      {
        type: 'validation_error',
        code: 'invalid_input',
        detail: 'Enter a valid email address.',
        attr: '1__target_email',
      },
    );
    const project = await call('invites_bulk_create', {
      key: a.key,
      params: org,
      body: [
        { target_email: email() },
        { target_email: email(), private_project_access: [{ id: b.project.id, level: 1 }] },
      ],
    });
    t.same(project.body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: TEAM_MISSING,
      attr: '1__private_project_access',
    });
    const higher = await call('invites_bulk_create', {
      key: member.key,
      params: org,
      body: [{ target_email: email() }, { target_email: email(), level: 8 }],
    });
    t.same(higher.body, HIGHER_INVITE);
    t.equal(await count(), start, 'no invite from any refused batch');
  });

  t.test('shape', async (t) => {
    t.same((await call('invites_bulk_create', { key: a.key, params: org, body: { target_email: email() } })).body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'This endpoint needs an array of data for bulk invite creation.',
      attr: null,
    });
    const many = Array.from({ length: 21 }, () => ({ target_email: email() }));
    t.same((await call('invites_bulk_create', { key: a.key, params: org, body: many })).body, {
      type: 'validation_error',
      code: 'max_length',
      detail: 'A maximum of 20 invites can be sent in a single request.',
      attr: null,
    });
    const twenty = many.slice(0, 20).map((i) => ({ ...i, send_email: false }));
    t.equal(
      (await call('invites_bulk_create', { key: a.key, params: org, body: twenty })).body.length,
      20,
      'twenty is fine',
    );
  });

  t.test('access', async (t) => {
    const body = [{ target_email: email(), send_email: false }];
    t.equal((await call('invites_bulk_create', { params: org, body })).status, 401);
    const readOnly = await makeKey(db, a.user, ['organization_member:read']);
    t.same(
      (await call('invites_bulk_create', { key: readOnly, params: org, body })).body,
      missingScope('organization_member:write'),
    );
    t.equal(
      (await call('invites_bulk_create', { key: a.key, params: { organization_id: b.organization.id }, body })).status,
      403,
    );
  });
});
