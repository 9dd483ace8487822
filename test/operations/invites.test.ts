import t from 'tap';
import { createServer } from 'node:net';
import { eq } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeInvite, makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import { startSmtp } from '../helpers/smtp.js';
import { users } from '../../src/db/schema/index.js';

const SITE = 'https://analytics.example.org';
const smtp = await startSmtp(t, { auth: { user: 'mailer', password: 's3cret' } });
const ctx = await buildTestApp(t, {
  emailHost: '127.0.0.1',
  emailPort: smtp.port,
  emailUser: 'mailer',
  emailPassword: 's3cret',
  emailFrom: 'invites@example.org',
  siteUrl: SITE,
});
const { call, db } = ctx;

const denied = (detail: string) => ({ type: 'authentication_error', code: 'permission_denied', detail, attr: null });
const missingScope = (scope: string) => denied(`API key missing required scope '${scope}'`);
const LEVEL_DENIED = denied('Your organization access level is insufficient.');
const HIGHER_INVITE = denied('You cannot invite a user with a higher permission level than your own.');
const ALREADY_MEMBER = {
  type: 'validation_error',
  code: 'invalid_input',
  detail: 'A user with this email address already belongs to the organization.',
  attr: null,
};
const TEAM_MISSING = 'Team does not exist on this organization, or it is private and you do not have access to it.';
let n = 0;
const email = (stem = 'invitee') => `${stem}-${process.pid}-${++n}@example.com`;

/** Mail for `to` among the messages received so far. */
const mailTo = (to: string) => smtp.messages.filter((m) => m.rcptTo.includes(to));

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

t.test('invites_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const old = await makeInvite(db, a, email('old'), { ageDays: 4 });
  const fresh = await makeInvite(db, a, email('fresh'), { ageDays: 2.9, level: 8 });
  const member = await makeMember(db, a, 1);
  const byMember = (
    await call('invites_create', {
      key: member.key,
      params: org,
      body: { target_email: email('newest'), send_email: false },
    })
  ).body;
  await makeInvite(db, b, email('theirs'));

  const res = await call('invites_list', { key: a.key, params: org });
  t.equal(res.status, 200);
  t.equal(res.body.count, 3, 'expired invites are listed, other organizations’ are not');
  t.same(
    res.body.results.map((i: { id: string }) => i.id),
    [byMember.id, fresh.id, old.id],
    'newest first',
  );
  t.same(
    res.body.results.map((i: { is_expired: boolean }) => i.is_expired),
    [false, false, true],
    'valid for 3 days',
  );
  t.match(res.body.results[1], { level: 8, emailing_attempt_made: false, created_by: { uuid: a.user.uuid } });

  await db.delete(users).where(eq(users.id, member.user.id));
  const orphan = await call('invites_list', { key: a.key, params: org, query: { limit: 1 } });
  t.equal(orphan.body.results[0].created_by, null, 'the sender is gone');
  t.equal(orphan.body.next, `${SITE}/api/organizations/${a.organization.id}/invites/?limit=1&offset=1`);

  const reader = await makeMember(db, a, 1, ['organization_member:read']);
  t.equal((await call('invites_list', { key: reader.key, params: org })).body.count, 3, 'members read');
  t.equal((await call('invites_list', { params: org })).status, 401);
  const orgScope = await makeKey(db, a.user, ['organization:read']);
  t.same((await call('invites_list', { key: orgScope, params: org })).body, missingScope('organization_member:read'));
  t.equal((await call('invites_list', { key: a.key, params: { organization_id: b.organization.id } })).status, 403);
  t.match(await call('invites_list', { key: a.key, params: org, query: { limit: 'many' as never } }), {
    status: 400,
    body: { attr: 'limit' },
  });
});

t.test('invites_destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const invite = await makeInvite(db, a);
  const theirs = await makeInvite(db, b);
  const params = { ...org, id: invite.id };

  const member = await makeMember(db, a, 1);
  t.same((await call('invites_destroy', { key: member.key, params })).body, LEVEL_DENIED);
  t.same((await call('invites_destroy', { key: a.key, params: { ...org, id: theirs.id } })).body, {
    type: 'invalid_request',
    code: 'not_found',
    detail: 'Not found.',
    attr: null,
  });
  t.equal((await call('invites_destroy', { key: a.key, params: { ...org, id: 'nope' } })).status, 404);
  t.equal(
    (await call('invites_destroy', { key: a.key, params: { organization_id: b.organization.id, id: theirs.id } }))
      .status,
    403,
  );
  t.equal((await call('invites_destroy', { params })).status, 401);
  const readOnly = await makeKey(db, a.user, ['organization_member:read']);
  t.same((await call('invites_destroy', { key: readOnly, params })).body, missingScope('organization_member:write'));

  const admin = await makeMember(db, a, 8);
  const res = await call('invites_destroy', { key: admin.key, params });
  t.equal(res.status, 204);
  t.equal(res.raw, '');
  t.equal((await call('invites_list', { key: a.key, params: org })).body.count, 0);
  t.equal((await call('invites_destroy', { key: a.key, params })).status, 404);
  t.equal(
    (await call('invites_list', { key: b.key, params: { organization_id: b.organization.id } })).body.count,
    1,
    'theirs untouched',
  );
});

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

t.test('e-mail settings', async (t) => {
  t.test(
    'without SITE_URL the link uses the configured address, never the Host header; the answer does not wait for the ' +
      'mail',
    async (t) => {
      const local = await startSmtp(t, { greetingDelayMs: 1500 });
      const app = await buildTestApp(t, {
        emailHost: '127.0.0.1',
        emailPort: local.port,
        host: '127.0.0.1',
        port: 8123,
      });
      const tenant = await makeTenant(app.db);
      const res = await app.call('invites_create', {
        key: tenant.key,
        params: { organization_id: tenant.organization.id },
        body: { target_email: email('origin') },
        // A caller choosing the Host would otherwise have the invite id mailed as a link to a server of theirs.
        headers: { host: 'attacker.example.net:8443' },
      });
      t.equal(res.status, 201);
      // The server greets only after 1.5 s: had the request waited for the mail, it would be there now.
      t.equal(local.messages.length, 0, 'the answer did not wait for the mail');
      const { mail, user } = (await local.waitFor(1))[0]!;
      t.ok(mail.text?.includes(`http://127.0.0.1:8123/signup/${res.body.id}`), 'link on HOST:PORT');
      t.notOk(`${mail.text}${mail.html}`.includes('attacker.example.net'), 'the Host header is not used');
      t.equal(user, undefined, 'no login without EMAIL_USER');
      t.equal(mail.from?.value[0]?.address, 'root@localhost', 'EMAIL_FROM default');
    },
  );

  t.test('a dead mail server is logged and never fails the request', async (t) => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const app = await buildTestApp(t, { emailHost: '127.0.0.1', emailPort: port });
    const logged: unknown[][] = [];
    const error = app.app.log.error.bind(app.app.log);
    app.app.log.error = ((...args: unknown[]) => {
      logged.push(args);
      return error(...(args as Parameters<typeof error>));
    }) as typeof app.app.log.error;
    const tenant = await makeTenant(app.db);
    const res = await app.call('invites_create', {
      key: tenant.key,
      params: { organization_id: tenant.organization.id },
      body: { target_email: email('dead') },
    });
    t.equal(res.status, 201);
    t.equal(res.body.emailing_attempt_made, true, 'the attempt was made');
    for (let i = 0; i < 100 && !logged.length; i++) await new Promise((r) => setTimeout(r, 50));
    t.match(logged[0]?.[1], 'invite e-mail could not be sent');
    t.match(logged[0]?.[0], { invite: `${res.body.id.slice(0, 8)}…`, err: { code: 'ESOCKET' } });
    t.notOk(JSON.stringify(logged).includes(res.body.id), 'the invite id itself, a credential, is not logged');
    t.equal(
      (await app.call('invites_list', { key: tenant.key, params: { organization_id: tenant.organization.id } })).body
        .count,
      1,
    );
  });

  t.test('without EMAIL_HOST no e-mail is attempted', async (t) => {
    const app = await buildTestApp(t);
    const tenant = await makeTenant(app.db);
    const res = await app.call('invites_create', {
      key: tenant.key,
      params: { organization_id: tenant.organization.id },
      body: { target_email: email() },
    });
    t.equal(res.status, 201);
    t.equal(res.body.emailing_attempt_made, false);
  });
});

t.test('members_can_invite', async (t) => {
  const a = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const member = await makeMember(db, a, 1);
  const admin = await makeMember(db, a, 8);
  t.equal(
    (await call('invites_create', { key: member.key, params: org, body: { target_email: email('allowed') } })).status,
    201,
    'members invite by default',
  );
  await call('organizations_partial_update', {
    key: a.key,
    params: { id: a.organization.id },
    body: { members_can_invite: false },
  });
  const before = (await call('invites_list', { key: a.key, params: org })).body.count;
  const denied = {
    type: 'authentication_error',
    code: 'permission_denied',
    detail: 'You do not have permission to perform this action.',
    attr: null,
  };
  t.same(
    (await call('invites_create', { key: member.key, params: org, body: { target_email: email('refused') } })).body,
    denied,
  );
  t.same(
    (await call('invites_bulk_create', { key: member.key, params: org, body: [{ target_email: email('refused') }] }))
      .body,
    denied,
    'bulk too',
  );
  t.equal((await call('invites_list', { key: a.key, params: org })).body.count, before, 'nothing was created');
  t.equal(
    (await call('invites_create', { key: admin.key, params: org, body: { target_email: email('admin') } })).status,
    201,
    'administrators still invite',
  );
  const res = await call('invites_create', {
    key: a.key,
    params: org,
    body: { target_email: email('owner'), send_email: false, combine_pending_invites: true },
  });
  t.equal(res.status, 201);
  t.notOk(
    'send_email' in res.body || 'combine_pending_invites' in res.body,
    'write-only fields are not answered, as in PostHog',
  );
});
