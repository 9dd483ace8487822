// Connection floods through the real listener: past the cap per client address and in all, new
// sockets are refused in PostHog's error shape while a client already connected keeps its answers;
// a few connections past the cap answer only the health check; and the cap sits below the
// process's open-file limit, so a flood cannot take the files the database and clients need.
import { Agent, request } from 'node:http';
import t from 'tap';
import { openTestDatabase } from '../helpers/db.js';
import { startServer } from '../helpers/server-process.js';
import { firstAnswer, openRaw, type RawClient } from './helpers/sockets.js';

const KEY = 'phx_connectioncapskey0000000000000000000000000000000';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const busyBody = {
  type: 'server_error',
  code: 'service_unavailable',
  detail: 'Too many open connections. Try again shortly.',
  attr: null,
};

/** A GET over a keep-alive agent (a client that connected before the flood), with its status and body. */
function get(agent: Agent, base: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent, headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function flood(base: string, count: number, localAddress: string): Promise<RawClient[]> {
  const clients: RawClient[] = [];
  for (let i = 0; i < count; i++) clients.push(await openRaw(base, localAddress));
  // The server sees each connection a moment after the client does.
  await sleep(500);
  return clients;
}

const refused = (clients: RawClient[]) => clients.filter((c) => firstAnswer(c.received())?.status === 503);
const silentlyOpen = (clients: RawClient[]) => clients.filter((c) => c.received() === '' && !c.socket.destroyed);

async function serve(t: { teardown(fn: () => unknown): void }, env: NodeJS.ProcessEnv, wrapper: string[] = []) {
  const pg = await openTestDatabase();
  t.teardown(async () => {
    await pg.database.close();
    await pg.drop();
  });
  const server = startServer(
    { BOOTSTRAP_API_KEY: KEY, RATE_LIMITS: 'off', DATABASE_URL: pg.url, WORKER: '0', ...env },
    wrapper,
  );
  t.teardown(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });
  return { server, base: await server.listening };
}

t.test('connections past the caps are refused while a connected client keeps its answers', async (t) => {
  const { server, base } = await serve(t, {
    MAX_CONNECTIONS: '40',
    HEALTH_CONNECTIONS: '2',
    MAX_CONNECTIONS_PER_ADDRESS: '30',
    ABORT_LOG_INTERVAL_SECONDS: '600',
  });
  const all: RawClient[] = [];
  t.teardown(() => {
    for (const c of all) c.socket.destroy();
  });
  const existing = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' });
  t.teardown(() => existing.destroy());
  t.equal((await get(existing, base, '/api/users/@me/')).status, 200, 'a client connects before the flood');
  const linesBefore = server.output().stdout.split('\n').length;

  // One address opens 40: 30 are let in, 10 refused.
  const one = await flood(base, 40, '127.0.0.1');
  all.push(...one);
  t.equal(silentlyOpen(one).length, 30, 'one address holds at most MAX_CONNECTIONS_PER_ADDRESS connections');
  t.equal(refused(one).length, 10, 'the rest are answered 503');
  t.same(firstAnswer(refused(one)[0]!.received())?.body, busyBody, 'in PostHog error shape');

  // Others fill the server to its cap (the existing client's connection counts too).
  all.push(...(await flood(base, 9, '127.0.0.3')));
  // Past the cap, HEALTH_CONNECTIONS more are let in, for the health check only.
  const [forApi, forHealth] = await flood(base, 2, '127.0.0.4');
  all.push(forApi!, forHealth!);
  // And past those, everything is refused.
  const past = await flood(base, 5, '127.0.0.5');
  all.push(...past);
  t.equal(refused(past).length, 5, 'connections past the cap and the health slots are refused');
  forApi!.socket.write(`GET /api/users/@me/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
  forHealth!.socket.write('GET /_health HTTP/1.1\r\nHost: x\r\n\r\n');
  await sleep(500);
  t.equal(firstAnswer(forApi!.received())?.status, 503, 'a connection past the cap is not served the API');
  t.equal(firstAnswer(forHealth!.received())?.status, 200, 'but is answered the health check');

  const during = await get(existing, base, '/api/users/@me/');
  t.equal(during.status, 200, 'the client connected before the flood is still answered');

  for (const c of all) c.socket.destroy();
  await sleep(300);
  const after = await fetch(`${base}/_health`);
  t.equal(after.status, 200, 'once the flood ends new clients connect again');
  const lines = server.output().stdout.split('\n').length - linesBefore;
  t.ok(lines <= 5, `the log grew by ${lines} lines for ${10 + 1 + 5} refusals`);
});

t.test('connections are capped below the open-file limit, leaving files for the database', async (t) => {
  const { server, base } = await serve(
    t,
    { MAX_CONNECTIONS_PER_ADDRESS: '10000', FD_RESERVE: '100', DATABASE_POOL_SIZE: '10', HEALTH_CONNECTIONS: '4' },
    ['prlimit', '--nofile=400', '--'],
  );
  // 400 files, less 100 kept back, 10 for the pool and 4 health slots.
  await sleep(300);
  const start = server
    .output()
    .stdout.split('\n')
    .find((l) => l.includes('open-file limit'));
  t.match(start, /open-file limit 400; connections capped at 286/, 'the limit and the cap are logged at start');

  // Clients connected before the flood, which then ask for database work in parallel.
  const existing = new Agent({ keepAlive: true, maxSockets: 8, localAddress: '127.0.0.2' });
  t.teardown(() => existing.destroy());
  const warm = await Promise.all(Array.from({ length: 8 }, () => get(existing, base, '/api/users/@me/')));
  t.ok(
    warm.every((r) => r.status === 200),
    'eight clients connect',
  );

  const sockets = await flood(base, 450, '127.0.0.1');
  t.teardown(() => {
    for (const c of sockets) c.socket.destroy();
  });
  // A loaded machine may take longer than the flood's half second to answer every refusal.
  for (let i = 0; i < 100 && refused(sockets).length < 450 - 286 - 4 + 8; i++) await sleep(100);
  t.ok(silentlyOpen(sockets).length <= 286 + 4 - 8, `${silentlyOpen(sockets).length} of 450 were let in`);
  t.ok(refused(sockets).length >= 450 - 286 - 4 + 8, `${refused(sockets).length} were refused`);

  const during = await Promise.all(
    Array.from({ length: 8 }, (_, i) => get(existing, base, i % 2 ? '/_health' : '/api/projects/@current/dashboards/')),
  );
  t.same(
    during.map((r) => r.status),
    Array(8).fill(200),
    'the connected clients are answered, database work included',
  );
  t.notOk(/EMFILE/.test(server.output().stdout + server.output().stderr), 'the process never ran out of files');
});
