// Failure: the database going away under load (cut through a TCP proxy between the app and
// PostgreSQL) and coming back. SIGTERM under load is in shutdown.test.ts.
import net from 'node:net';
import { sql } from 'drizzle-orm';
import t from 'tap';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { openTestDatabase } from './helpers/db.js';
import { makeTenant } from './helpers/factories.js';
import { rows } from './helpers/fingerprint.js';

/** The longest a request may take while the database is gone: connect_timeout (5 s) plus slack. */
const BOUND_MS = 9_000;

class TcpProxy {
  private server = net.createServer((client) => this.accept(client));
  private sockets = new Set<net.Socket>();
  mode: 'pass' | 'refuse' | 'blackhole' = 'pass';

  constructor(private target: net.NetConnectOpts) {}

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => {});
  }

  private accept(client: net.Socket): void {
    this.track(client);
    if (this.mode === 'refuse') return void client.destroy();
    if (this.mode === 'blackhole') return; // accepted, never answered
    const upstream = net.connect(this.target);
    this.track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  /** Drops every open connection; new ones are then refused or left hanging. */
  cut(mode: 'refuse' | 'blackhole'): void {
    this.mode = mode;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.mode = 'pass';
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const UNAVAILABLE = {
  type: 'server_error',
  code: 'service_unavailable',
  detail: 'The database is unavailable. Try again shortly.',
  attr: null,
};

t.test('the database going away: 503 in the error shape within a bound, then recovery by itself', async (t) => {
  const direct = await openTestDatabase();
  const target = new URL(direct.url);
  // The embedded cluster listens on a Unix socket only (its folder is `?host=`): the proxy reaches it there.
  const socketFolder = target.searchParams.get('host');
  const port = Number(target.port || 5432);
  const proxy = new TcpProxy(
    socketFolder ? { path: `${socketFolder}/.s.PGSQL.${port}` } : { host: target.hostname, port },
  );
  const proxied = new URL(direct.url);
  proxied.searchParams.delete('host');
  proxied.host = `127.0.0.1:${await proxy.listen()}`;
  const database = await openDatabase({ url: proxied.toString(), poolSize: 4 });
  const app = await buildApp({ config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }), database });
  t.teardown(async () => {
    await app.close();
    await database.close();
    await proxy.close();
    await direct.database.close();
    await direct.drop();
  });
  const tenant = await makeTenant(direct.database.db);
  const base = `/api/projects/${tenant.project.id}/dashboards/`;

  async function request(method: 'GET' | 'POST', url: string, body?: unknown, tag = `${method} ${url}`) {
    const started = Date.now();
    const res = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${tenant.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined, ms: Date.now() - started, tag };
  }
  const mixed = (tag: string, n: number) =>
    Array.from({ length: n }, (_, i) =>
      i % 3 === 0 ? request('POST', base, { name: `${tag}-${i}` }) : request('GET', base),
    );

  const warm = await Promise.all(mixed('before', 12));
  t.ok(
    warm.every((r) => r.status < 300),
    'requests succeed through the proxy',
  );

  // Cut while requests are in flight: each either finished before the cut or gets a 503.
  const inFlight = mixed('cut', 24);
  await new Promise((resolve) => setTimeout(resolve, 5));
  proxy.cut('refuse');
  const during = await Promise.all([...inFlight, ...mixed('refused', 12), request('GET', '/_readyz')]);
  const unavailable = during.filter((r) => r.status === 503);
  t.equal(
    (await app.inject({ method: 'GET', url: '/_health' })).statusCode,
    200,
    'liveness does not depend on the database',
  );
  t.ok(unavailable.length >= 12, `${unavailable.length} of ${during.length} requests got 503`);
  t.ok(
    during.every((r) => r.status < 300 || r.status === 503),
    `only successes and 503s: ${[...new Set(during.map((r) => r.status))]}`,
  );
  t.ok(
    unavailable.every((r) => r.ms < BOUND_MS),
    `each within ${BOUND_MS} ms (slowest ${Math.max(...during.map((r) => r.ms))} ms)`,
  );
  t.same(
    new Set(unavailable.map((r) => JSON.stringify(r.body))),
    new Set([JSON.stringify(UNAVAILABLE)]),
    'every 503 in the error shape',
  );

  // A database that accepts connections and never answers: the connect timeout bounds the wait.
  proxy.cut('blackhole');
  const hanging = await Promise.all(mixed('blackhole', 6));
  t.ok(
    hanging.every((r) => r.status === 503),
    `a hanging database gives 503 (${hanging.map((r) => r.status)})`,
  );
  t.ok(
    hanging.every((r) => r.ms < BOUND_MS),
    `within ${BOUND_MS} ms (slowest ${Math.max(...hanging.map((r) => r.ms))} ms)`,
  );

  proxy.restore();
  const deadline = Date.now() + 20_000;
  let recovered = false;
  while (!recovered && Date.now() < deadline) {
    recovered = (await request('GET', base)).status === 200;
    if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  t.ok(recovered, 'the server recovers by itself once the database is back');
  const after = await Promise.all(mixed('after', 12));
  t.ok(
    after.every((r) => r.status < 300),
    `and keeps serving (${after.map((r) => r.status)})`,
  );
  t.equal((await request('GET', '/_readyz')).status, 200, 'ready again');

  // Every acknowledged write of the whole run is stored, and no refused one is.
  const acknowledged = [...warm, ...during, ...after].filter((r) => r.status === 201).map((r) => r.body.name as string);
  const stored = (await rows<{ name: string }>(direct.database.db, sql`select name from dashboards`)).map(
    (r) => r.name,
  );
  t.same(
    stored.filter((n) => !/^(before|after)-/.test(n)).sort(),
    acknowledged.filter((n) => !/^(before|after)-/.test(n)).sort(),
    'writes during the outage are stored exactly when acknowledged',
  );
  t.equal(stored.filter((n) => /^(before|after)-/.test(n)).length, 8, 'writes before and after are all stored');
});
