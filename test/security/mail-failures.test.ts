// Invite e-mails are sent after the answer: a mail server that resets, talks nonsense or hangs up
// mid-conversation must cost a logged failure, never the process (an unhandled socket error here
// would end this test process too).
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

type Behaviour = (socket: Socket) => void;
const behaviours: Behaviour[] = [
  (s) => s.resetAndDestroy(),
  (s) => s.end('999 what is this\r\n'),
  (s) => {
    s.write('220 hello\r\n');
    s.once('data', () => s.resetAndDestroy());
  },
  (s) => {
    s.write('220 hello\r\n');
    s.once('data', () => s.end(`250-${'x'.repeat(100_000)}\r\n`));
  },
  (s) => s.write('\u0000\u00ff\r\n\r\n'),
];

t.test('a hostile mail server cannot take the server down', async (t) => {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    behaviours[connections++ % behaviours.length]!(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const ctx = await buildTestApp(t, { emailHost: '127.0.0.1', emailPort: (server.address() as AddressInfo).port });
  const tenant = await makeTenant(ctx.db);
  for (let i = 0; i < behaviours.length; i++) {
    const res = await ctx.call('invites_create', {
      key: tenant.key,
      params: { organization_id: tenant.organization.id },
      body: { target_email: `hostile-${i}@example.com` },
    });
    t.equal(res.status, 201, `invite ${i} created`);
    t.equal(res.body.emailing_attempt_made, true);
  }
  // The sends run after the answers; the server that never answers is given up on by the client.
  const deadline = Date.now() + 15_000;
  while (connections < behaviours.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.equal(connections, behaviours.length, 'every invite tried its e-mail');
  await new Promise((r) => setTimeout(r, 500));
  const list = await ctx.call('invites_list', { key: tenant.key, params: { organization_id: tenant.organization.id } });
  t.equal(list.status, 200, 'the app still answers');
});
