// Failure: the database going away under load (cut through a TCP proxy between the app and
// PostgreSQL) and coming back, and SIGTERM while writes are in flight.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import t from 'tap';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Db } from '../src/db/client.js';
import { openTestDatabase } from './helpers/db.js';
import { makeTenant } from './helpers/factories.js';
import { rows } from './helpers/fingerprint.js';
import { startServer } from './helpers/server-process.js';

/** The longest a request may take while the database is gone: connect_timeout (5 s) plus slack. */
const BOUND_MS = 9_000;

class TcpProxy {
  private server = net.createServer((client) => this.accept(client));
  private sockets = new Set<net.Socket>();
  mode: 'pass' | 'refuse' | 'blackhole' = 'pass';

  constructor(private target: { host: string; port: number }) {}

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

t.test('the database going away: 503 in the error shape within a bound, then recovery by itself', {
  skip: process.env.DATABASE_URL ? false : 'needs PostgreSQL (DATABASE_URL): PGlite runs inside the process, with no connection to cut',
}, async (t) => {
  const direct = await openTestDatabase();
  const target = new URL(direct.url!);
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const proxied = new URL(direct.url!);
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
    Array.from({ length: n }, (_, i) => (i % 3 === 0 ? request('POST', base, { name: `${tag}-${i}` }) : request('GET', base)));

  const warm = await Promise.all(mixed('before', 12));
  t.ok(warm.every((r) => r.status < 300), 'requests succeed through the proxy');

  // Cut while requests are in flight: each either finished before the cut or gets a 503.
  const inFlight = mixed('cut', 24);
  await new Promise((resolve) => setTimeout(resolve, 5));
  proxy.cut('refuse');
  const during = await Promise.all([...inFlight, ...mixed('refused', 12), request('GET', '/_readyz')]);
  const unavailable = during.filter((r) => r.status === 503);
  t.equal((await app.inject({ method: 'GET', url: '/_health' })).statusCode, 200, 'liveness does not depend on the database');
  t.ok(unavailable.length >= 12, `${unavailable.length} of ${during.length} requests got 503`);
  t.ok(during.every((r) => r.status < 300 || r.status === 503), `only successes and 503s: ${[...new Set(during.map((r) => r.status))]}`);
  t.ok(unavailable.every((r) => r.ms < BOUND_MS), `each within ${BOUND_MS} ms (slowest ${Math.max(...during.map((r) => r.ms))} ms)`);
  t.same(new Set(unavailable.map((r) => JSON.stringify(r.body))), new Set([JSON.stringify(UNAVAILABLE)]), 'every 503 in the error shape');

  // A database that accepts connections and never answers: the connect timeout bounds the wait.
  proxy.cut('blackhole');
  const hanging = await Promise.all(mixed('blackhole', 6));
  t.ok(hanging.every((r) => r.status === 503), `a hanging database gives 503 (${hanging.map((r) => r.status)})`);
  t.ok(hanging.every((r) => r.ms < BOUND_MS), `within ${BOUND_MS} ms (slowest ${Math.max(...hanging.map((r) => r.ms))} ms)`);

  proxy.restore();
  const deadline = Date.now() + 20_000;
  let recovered = false;
  while (!recovered && Date.now() < deadline) {
    recovered = (await request('GET', base)).status === 200;
    if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  t.ok(recovered, 'the server recovers by itself once the database is back');
  const after = await Promise.all(mixed('after', 12));
  t.ok(after.every((r) => r.status < 300), `and keeps serving (${after.map((r) => r.status)})`);
  t.equal((await request('GET', '/_readyz')).status, 200, 'ready again');

  // Every acknowledged write of the whole run is stored, and no refused one is.
  const acknowledged = [...warm, ...during, ...after].filter((r) => r.status === 201).map((r) => r.body.name as string);
  const stored = (await rows<{ name: string }>(direct.database.db, sql`select name from dashboards`)).map((r) => r.name);
  t.same(stored.filter((n) => !/^(before|after)-/.test(n)).sort(), acknowledged.filter((n) => !/^(before|after)-/.test(n)).sort(),
    'writes during the outage are stored exactly when acknowledged');
  t.equal(stored.filter((n) => /^(before|after)-/.test(n)).length, 8, 'writes before and after are all stored');
});

/** A POST whose body is sent in two halves, the second when `finish` is called. */
function slowWrite(base: string, key: string, name: string) {
  const body = Buffer.from(JSON.stringify({ name, tags: ['slow'] }));
  const req = http.request(`${base}/api/projects/@current/dashboards/?slow=1`, {
    method: 'POST',
    agent: false,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length },
  });
  // Settles with status 0 on a network error, so an early failure is reported by the assertion.
  const response = new Promise<{ status: number; body: string }>((resolve) => {
    req.on('socket', (socket) => socket.on('error', () => {}));
  req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', (err) => resolve({ status: 0, body: String(err) }));
  });
  req.write(body.subarray(0, 10));
  return { response, finish: () => req.end(body.subarray(10)) };
}

async function dashboardNames(db: Db): Promise<Set<string>> {
  return new Set((await rows<{ name: string }>(db, sql`select name from dashboards`)).map((r) => r.name));
}

t.test('SIGTERM drains in-flight requests and loses no acknowledged write', async (t) => {
  const key = 'phx_sigtermdrainkey000000000000000000000000000000';
  const dataDir = mkdtempSync(join(tmpdir(), 'api-sigterm-'));
  const pg = process.env.DATABASE_URL ? await openTestDatabase() : undefined;
  t.teardown(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (pg) {
      await pg.database.close();
      await pg.drop();
    }
  });
  const server = startServer({
    BOOTSTRAP_API_KEY: key,
    RATE_LIMITS: 'off',
    ...(pg ? { DATABASE_URL: pg.url } : { DATABASE_URL: '', DATA_DIR: dataDir }),
  });
  const url = await server.listening;

  interface Outcome {
    name: string;
    status?: number;
    body?: string;
    error?: string;
    before: boolean;
    answeredAfter: boolean;
  }
  const outcomes: Outcome[] = [];
  let signalled = false;
  let stop = false;
  let acknowledged = 0;
  let signal!: () => void;
  const signalSent = new Promise<void>((resolve) => (signal = resolve));
  let next = 0;

  /** Abandoning writers hang up soon after sending: the server must finish their handlers before its database closes. */
  let abandoned = 0;
  let slowStarted = false;
  async function abandoning(): Promise<void> {
    while (!stop && !slowStarted) {
      const body = JSON.stringify({ name: `abandoned-${abandoned++}`, use_template: 'DEFAULT_APP' });
      const req = http.request(`${url}/api/projects/@current/dashboards/`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.on('error', () => {});
      req.end(body);
      await new Promise((resolve) => setTimeout(resolve, 5));
      req.destroy();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function writer(): Promise<void> {
    while (!stop) {
      const name = `write-${next++}`;
      const outcome: Outcome = { name, before: !signalled, answeredAfter: false };
      outcomes.push(outcome);
      try {
        const res = await fetch(`${url}/api/projects/@current/dashboards/`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name, use_template: 'DEFAULT_APP', tags: ['drain'] }),
        });
        outcome.body = await res.text();
        outcome.status = res.status;
        outcome.answeredAfter = signalled;
        if (res.status === 201 && ++acknowledged === 40) signal();
      } catch (err) {
        outcome.error = String((err as Error).cause ?? err);
        if (signalled) stop = true;
      }
    }
  }
  const writers = [...Array.from({ length: 16 }, writer), ...Array.from({ length: 2 }, abandoning)];
  await signalSent;
  // A request the server is certainly working on at SIGTERM: its headers are in, its body is not.
  slowStarted = true;
  const slow = slowWrite(url, key, 'slow-write');
  for (let i = 0; i < 400 && !/\?slow=1","host[^\n]*"incoming request"/.test(server.output().stdout); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  signalled = true;
  server.child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 300));
  slow.finish();
  const slowAnswer = await slow.response;
  const code = await server.exited;
  stop = true;
  await Promise.all(writers);

  t.equal(code, 0, 'the server exits cleanly', { output: server.output().stdout.slice(-3000) + server.output().stderr.slice(-2000) });
  const answered = outcomes.filter((o) => o.status !== undefined);
  t.same([...new Set(answered.map((o) => o.status))], [201], `every answer is a 201 ${JSON.stringify(answered.find((o) => o.status !== 201) ?? "")}`);
  t.equal(slowAnswer.status, 201, 'a request whose body was still arriving at SIGTERM is answered', {
    answer: slowAnswer.body,
    log: server.output().stdout.split('\n').filter((l) => /slow|"level":[456]0|listening|closing/i.test(l)).join('\n').slice(-3000),
  });
  const drained = outcomes.filter((o) => o.before && o.answeredAfter && o.status === 201);
  t.comment(`${drained.length} more requests in flight at SIGTERM were answered after it`);

  const log = server.output().stdout;
  t.notMatch(log, /"level":(40|50|60)/, 'no warning or error was logged while draining (no query after the database closed)');
  const database = pg ? pg.database : await openDatabase({ dataDir });
  const stored = new Set([...(await dashboardNames(database.db))].filter((n) => !n.startsWith('abandoned-')));
  if (!pg) await database.close();
  t.ok(stored.has('slow-write'), 'and its write is stored');
  stored.delete('slow-write');
  const acked = answered.map((o) => o.name);
  t.ok(acked.every((n) => stored.has(n)), `all ${acked.length} acknowledged writes are stored`);
  const cut = outcomes.filter((o) => o.error);
  t.ok(cut.every((o) => !stored.has(o.name)), `none of the ${cut.length} unanswered requests was half-done behind the client's back`);
  t.equal(stored.size, acked.length, 'and nothing unacknowledged was stored');
});

t.test('SIGTERM right after clients hang up: their handlers finish before the database closes', async (t) => {
  const key = 'phx_sigtermhangupkey00000000000000000000000000000';
  const dataDir = mkdtempSync(join(tmpdir(), 'api-hangup-'));
  const pg = process.env.DATABASE_URL ? await openTestDatabase() : undefined;
  t.teardown(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (pg) {
      await pg.database.close();
      await pg.drop();
    }
  });
  const server = startServer({
    BOOTSTRAP_API_KEY: key,
    RATE_LIMITS: 'off',
    ...(pg ? { DATABASE_URL: pg.url } : { DATABASE_URL: '', DATA_DIR: dataDir }),
  });
  const url = await server.listening;
  const warm = await fetch(`${url}/api/users/@me/`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(warm.status, 200);
  const received = () => (server.output().stdout.match(/"url":"\/api\/projects\/@current\/dashboards\/"[^\n]*"incoming request"/g) ?? []).length;
  const requests = Array.from({ length: 12 }, (_, i) => {
    const body = JSON.stringify({ name: `hangup-${i}`, use_template: 'DEFAULT_APP' });
    const req = http.request(`${url}/api/projects/@current/dashboards/`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.end(body);
    return req;
  });
  for (let i = 0; i < 200 && received() < requests.length; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  for (const req of requests) req.destroy();
  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0, 'the server exits cleanly');
  t.notMatch(server.output().stdout, /"level":(40|50|60)/, 'no query failed because the database had closed');
});
