// SIGTERM under load: in-flight requests finish, no acknowledged write is lost, and the database
// closes only after the last handler.
import http from 'node:http';
import { sql } from 'drizzle-orm';
import t, { type Test } from 'tap';
import type { Db } from '../src/db/client.js';
import { openTestDatabase } from './helpers/db.js';
import { rows } from './helpers/fingerprint.js';
import { startServer } from './helpers/server-process.js';

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

/**
 * A server process on a fresh database of its own on the suite's server (the embedded cluster's
 * own stop after the drain is in embedded.test.ts).
 */
async function serverOnItsOwnDatabase(t: Test, key: string) {
  const pg = await openTestDatabase();
  t.teardown(async () => {
    await pg.database.close();
    await pg.drop();
  });
  const server = startServer({
    BOOTSTRAP_API_KEY: key,
    RATE_LIMITS: 'off',
    // The "incoming request" lines these tests wait for are written at debug.
    LOG_LEVEL: 'debug',
    DATABASE_URL: pg.url,
  });
  return { server, url: await server.listening, pg };
}

t.test('SIGTERM drains in-flight requests and loses no acknowledged write', async (t) => {
  const key = 'phx_sigtermdrainkey000000000000000000000000000000';
  const { server, url, pg } = await serverOnItsOwnDatabase(t, key);

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

  /**
   * Abandoning writers hang up soon after sending: the server must finish their handlers before its database
   * closes.
   */
  let abandoned = 0;
  let slowStarted = false;
  async function abandoning(): Promise<void> {
    while (!stop && !slowStarted) {
      const body = JSON.stringify({ name: `abandoned-${abandoned++}`, use_template: 'DEFAULT_APP' });
      const req = http.request(`${url}/api/projects/@current/dashboards/`, {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
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

  t.equal(code, 0, 'the server exits cleanly', {
    output: server.output().stdout.slice(-3000) + server.output().stderr.slice(-2000),
  });
  const answered = outcomes.filter((o) => o.status !== undefined);
  t.same(
    [...new Set(answered.map((o) => o.status))],
    [201],
    `every answer is a 201 ${JSON.stringify(answered.find((o) => o.status !== 201) ?? '')}`,
  );
  t.equal(slowAnswer.status, 201, 'a request whose body was still arriving at SIGTERM is answered', {
    answer: slowAnswer.body,
    log: server
      .output()
      .stdout.split('\n')
      .filter((l) => /slow|"level":[456]0|listening|closing/i.test(l))
      .join('\n')
      .slice(-3000),
  });
  const drained = outcomes.filter((o) => o.before && o.answeredAfter && o.status === 201);
  t.comment(`${drained.length} more requests in flight at SIGTERM were answered after it`);

  const log = server.output().stdout;
  t.match(
    log,
    /"signal":"SIGTERM"[^\n]*"msg":"shutting down: draining requests"/,
    'the shutdown is logged as it starts',
  );
  t.match(log, /"msg":"stopped"/, 'and as it ends');
  t.notMatch(
    log,
    /"level":(40|50|60)/,
    'no warning or error was logged while draining (no query after the database closed)',
  );
  const stored = new Set([...(await dashboardNames(pg.database.db))].filter((n) => !n.startsWith('abandoned-')));
  t.ok(stored.has('slow-write'), 'and its write is stored');
  stored.delete('slow-write');
  const acked = answered.map((o) => o.name);
  t.ok(
    acked.every((n) => stored.has(n)),
    `all ${acked.length} acknowledged writes are stored`,
  );
  const cut = outcomes.filter((o) => o.error);
  t.ok(
    cut.every((o) => !stored.has(o.name)),
    `none of the ${cut.length} unanswered requests was half-done behind the client's back`,
  );
  t.equal(stored.size, acked.length, 'and nothing unacknowledged was stored');
});

t.test('SIGTERM right after clients hang up: their handlers finish before the database closes', async (t) => {
  const key = 'phx_sigtermhangupkey00000000000000000000000000000';
  const { server, url } = await serverOnItsOwnDatabase(t, key);
  const warm = await fetch(`${url}/api/users/@me/`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(warm.status, 200);
  const received = () =>
    (server.output().stdout.match(/"url":"\/api\/projects\/@current\/dashboards\/"[^\n]*"incoming request"/g) ?? [])
      .length;
  const requests = Array.from({ length: 12 }, (_, i) => {
    const body = JSON.stringify({ name: `hangup-${i}`, use_template: 'DEFAULT_APP' });
    const req = http.request(`${url}/api/projects/@current/dashboards/`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
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
