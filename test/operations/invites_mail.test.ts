import t from 'tap';
import { createServer } from 'node:net';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { startSmtp } from '../helpers/smtp.js';
import { email } from '../helpers/invites-app.js';

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
