import t from 'tap';
import { makeInvite, makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import {
  SITE,
  smtp,
  call,
  db,
  denied,
  missingScope,
  HIGHER_INVITE,
  ALREADY_MEMBER,
  TEAM_MISSING,
  n,
  email,
  mailTo,
} from '../helpers/invites-app.js';

t.test('invites_create', async (t) => {
  const a = await makeTenant(db, 'Acme & Co');
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };

  t.test('creates the invite and e-mails the sign-up link after answering', async (t) => {
    const before = smtp.messages.length;
    const res = await call('invites_create', {
      key: a.key,
      params: org,
      body: {
        target_email: `Grace.Hopper-${n}@Example.COM`,
        first_name: 'Grace',
        message: 'Join <us>!',
        id: 'x',
        is_expired: true,
      },
    });
    t.equal(res.status, 201);
    const invite = res.body;
    t.match(invite, {
      target_email: `Grace.Hopper-${n}@example.com`,
      first_name: 'Grace',
      level: 1,
      message: 'Join <us>!',
      private_project_access: [],
      is_expired: false,
      emailing_attempt_made: true,
      created_by: { id: a.user.id, uuid: a.user.uuid, email: a.user.email },
    });
    t.not(invite.id, 'x', 'read-only fields are ignored');
    await smtp.waitFor(before + 1);
    const { mail, rcptTo, user } = mailTo(invite.target_email)[0]!;
    t.same(rcptTo, [invite.target_email]);
    t.equal(user, 'mailer', 'authenticated with EMAIL_USER and EMAIL_PASSWORD');
    t.equal(mail.from?.value[0]?.address, 'invites@example.org', 'from EMAIL_FROM');
    t.match(mail.subject, /invited you to join Acme & Co/);
    const link = `${SITE}/signup/${invite.id}`;
    t.ok(mail.text?.includes(link), 'the text carries the sign-up link');
    t.ok(mail.text?.includes('Join <us>!'), 'and the personal message');
    t.ok(String(mail.html).includes(`href="${link}"`), 'the HTML links to it');
    t.ok(String(mail.html).includes('Join &lt;us&gt;!'), 'the message is escaped in HTML');

    // The link works: accepting it makes the invitee a member.
    const signup = await call('signup_create', { params: { invite_id: link.split('/').pop()! }, body: {} });
    t.equal(signup.status, 201);
    t.equal(signup.body.organization.id, a.organization.id);
  });

  t.test('send_email false sends nothing', async (t) => {
    const quiet = email('quiet');
    const res = await call('invites_create', {
      key: a.key,
      params: org,
      body: { target_email: quiet, send_email: false },
    });
    t.equal(res.status, 201);
    t.equal(res.body.emailing_attempt_made, false);
    const loud = email('loud');
    const before = smtp.messages.length;
    t.equal(
      (await call('invites_create', { key: a.key, params: org, body: { target_email: loud } })).body
        .emailing_attempt_made,
      true,
    );
    await smtp.waitFor(before + 1);
    await new Promise((r) => setTimeout(r, 200));
    t.equal(mailTo(quiet).length, 0, 'no mail for the quiet invite');
    t.equal(mailTo(loud).length, 1);
  });

  t.test('re-inviting replaces the earlier invites', async (t) => {
    const target = email('again');
    const ids: string[] = [];
    for (const level of [1, 8, 1]) {
      ids.push(
        (
          await call('invites_create', {
            key: a.key,
            params: org,
            body: { target_email: target, level, send_email: false },
          })
        ).body.id,
      );
    }
    const upper = await call('invites_create', {
      key: a.key,
      params: org,
      body: { target_email: target.replace('example.com', 'EXAMPLE.com'), send_email: false },
    });
    const list = await call('invites_list', { key: a.key, params: org, query: { limit: 1000 } });
    const mine = list.body.results.filter((i: { target_email: string }) => i.target_email === target);
    t.same(
      mine.map((i: { id: string }) => i.id),
      [upper.body.id],
      'exactly one invite is left, the newest',
    );
  });

  t.test('combine_pending_invites keeps the highest level and project access', async (t) => {
    const p2 = await makeProject(db, a);
    const target = email('combine');
    await makeInvite(db, a, target, { level: 15, ageDays: 4 });
    await call('invites_create', {
      key: a.key,
      params: org,
      body: {
        target_email: target,
        level: 8,
        private_project_access: [{ id: a.project.id, level: 8 }],
        send_email: false,
      },
    });
    const res = await call('invites_create', {
      key: a.key,
      params: org,
      body: {
        target_email: target,
        level: 1,
        private_project_access: [
          { id: a.project.id, level: 1 },
          { id: p2.id, level: 1 },
        ],
        combine_pending_invites: true,
        send_email: false,
      },
    });
    t.equal(res.status, 201);
    t.equal(res.body.level, 8, 'the expired owner invite does not count');
    t.same(
      [...res.body.private_project_access].sort((x: { id: number }, y: { id: number }) => x.id - y.id),
      [
        { id: a.project.id, level: 8 },
        { id: p2.id, level: 1 },
      ],
    );
  });

  t.test('combining never yields a level above the combining user’s own', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    const target = email('escalate');
    const pending = await call('invites_create', {
      key: admin.key,
      params: org,
      body: { target_email: target, level: 8, send_email: false },
    });
    t.equal(pending.body.level, 8);
    const merged = await call('invites_create', {
      key: member.key,
      params: org,
      body: { target_email: target, level: 1, combine_pending_invites: true, send_email: false },
    });
    t.equal(merged.status, 201);
    t.equal(merged.body.level, 1, 'the administrator’s level is not taken over');
    const bulk = await call('invites_bulk_create', {
      key: admin.key,
      params: org,
      body: [{ target_email: target, level: 8, send_email: false }],
    });
    const viaBulk = await call('invites_bulk_create', {
      key: member.key,
      params: org,
      body: [{ target_email: target, combine_pending_invites: true, send_email: false }],
    });
    t.equal(bulk.body[0].level, 8);
    t.equal(viaBulk.body[0].level, 1, 'nor through the bulk route');
    const joined = await call('signup_create', { params: { invite_id: viaBulk.body[0].id } });
    t.equal(joined.status, 201);
    t.equal(joined.body.user.organization.membership_level, 1, 'whoever redeems it is a member');

    const upTo = email('admin-combines');
    await makeInvite(db, a, upTo, { level: 15 });
    const byAdmin = await call('invites_create', {
      key: admin.key,
      params: org,
      body: { target_email: upTo, level: 1, combine_pending_invites: true, send_email: false },
    });
    t.equal(byAdmin.body.level, 8, 'an administrator combines an owner invite up to their own level');
  });

  t.test('refusals', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    const shouting = member.user.email.replace('example.com', 'EXAMPLE.COM');
    t.same(
      (await call('invites_create', { key: a.key, params: org, body: { target_email: member.user.email } })).body,
      ALREADY_MEMBER,
    );
    t.same(
      (await call('invites_create', { key: a.key, params: org, body: { target_email: shouting } })).body,
      ALREADY_MEMBER,
    );
    t.same(
      (await call('invites_create', { key: member.key, params: org, body: { target_email: email(), level: 8 } })).body,
      HIGHER_INVITE,
    );
    t.same(
      (await call('invites_create', { key: admin.key, params: org, body: { target_email: email(), level: 15 } })).body,
      HIGHER_INVITE,
    );
    t.equal(
      (
        await call('invites_create', {
          key: admin.key,
          params: org,
          body: { target_email: email(), level: 8, send_email: false },
        })
      ).status,
      201,
    );
    t.equal(
      (
        await call('invites_create', {
          key: member.key,
          params: org,
          body: { target_email: email(), send_email: false },
        })
      ).status,
      201,
      'members invite',
    );

    const access = (id: number) => ({
      target_email: email(),
      private_project_access: [{ id, level: 1 }],
      send_email: false,
    });
    t.same((await call('invites_create', { key: a.key, params: org, body: access(b.project.id) })).body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: TEAM_MISSING,
      attr: 'private_project_access',
    });
    t.same(
      (await call('invites_create', { key: a.key, params: org, body: access(a.project.id) })).body
        .private_project_access,
      [{ id: a.project.id, level: 1 }],
    );
    const badLevel = await call('invites_create', {
      key: a.key,
      params: org,
      body: { target_email: email(), private_project_access: [{ id: a.project.id, level: 15 }] },
    });
    t.match(badLevel.body, { code: 'invalid_choice', attr: 'private_project_access__0__level' });
    t.equal(
      (
        await call('invites_create', {
          key: a.key,
          params: org,
          body: { target_email: email(), private_project_access: null, send_email: false },
        })
      ).body.private_project_access,
      null,
    );
  });

  t.test('validation', async (t) => {
    const count = async () => (await call('invites_list', { key: a.key, params: org })).body.count;
    const before = await count();
    t.same((await call('invites_create', { key: a.key, params: org, body: { first_name: 'x' } })).body, {
      type: 'validation_error',
      code: 'required',
      detail: 'This field is required.',
      attr: 'target_email',
    });
    t.same((await call('invites_create', { key: a.key, params: org, body: { target_email: 'not an email' } })).body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'Enter a valid email address.',
      attr: 'target_email',
    });
    t.match(
      (
        await call('invites_create', {
          key: a.key,
          params: org,
          body: { target_email: email(), first_name: 'x'.repeat(31) },
        })
      ).body,
      { code: 'max_length', attr: 'first_name' },
    );
    t.same(
      (await call('invites_create', { key: a.key, params: org, body: { target_email: email(), level: 3 } })).body,
      {
        type: 'validation_error',
        code: 'invalid_choice',
        detail: '"3" is not a valid choice.',
        attr: 'level',
      },
    );
    t.match(
      (await call('invites_create', { key: a.key, params: org, body: { target_email: email(), send_email: 'no' } }))
        .body,
      { code: 'invalid_input', attr: 'send_email' },
    );
    t.match(
      (
        await call('invites_create', {
          key: a.key,
          params: org,
          body: { target_email: email(), private_project_access: {} },
        })
      ).body,
      { attr: 'private_project_access' },
    );
    t.equal(await count(), before, 'nothing was created');
  });

  t.test('access', async (t) => {
    const body = { target_email: email(), send_email: false };
    t.equal((await call('invites_create', { params: org, body })).status, 401);
    const readOnly = await makeKey(db, a.user, ['organization_member:read', 'organization:write']);
    t.same(
      (await call('invites_create', { key: readOnly, params: org, body })).body,
      missingScope('organization_member:write'),
    );
    t.same(
      (await call('invites_create', { key: a.key, params: { organization_id: b.organization.id }, body })).body,
      denied('You do not have permission to perform this action.'),
    );
  });
});
