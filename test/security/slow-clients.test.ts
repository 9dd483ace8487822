// Slow-body clients (headers, then a byte now and then) through the real listener: they are cut off
// by the deadline and the minimum body rate (short ones here, set by environment), while `/_health`
// and an authenticated call keep answering; the log grows by a summary, not a line per socket.
import t from 'tap';
import { openTestDatabase } from '../helpers/db.js';
import { startServer } from '../helpers/server-process.js';
import { openRaw, trickle, type RawClient } from './helpers/sockets.js';

const KEY = 'phx_slowclientskey000000000000000000000000000000000';
/** Slow-body sockets: a byte a second. */
const SLOW = 300;
/** Steady but endless bodies: fast enough for the minimum rate, never complete. */
const ENDLESS = 20;
const SOCKETS = SLOW + ENDLESS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a few hundred slow-body sockets are cut off while the server keeps answering', async (t) => {
  const pg = await openTestDatabase();
  t.teardown(async () => {
    await pg.database.close();
    await pg.drop();
  });
  const server = startServer({
    BOOTSTRAP_API_KEY: KEY,
    RATE_LIMITS: 'off',
    DATABASE_URL: pg.url,
    WORKER: '0',
    REQUEST_TIMEOUT_SECONDS: '4',
    CAPTURE_REQUEST_TIMEOUT_SECONDS: '6',
    BODY_RATE_GRACE_SECONDS: '2',
    BODY_MIN_BYTES_PER_SECOND: '50',
    MAX_CONNECTIONS_PER_ADDRESS: '2000',
    ABORT_LOG_INTERVAL_SECONDS: '3',
  });
  t.teardown(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });
  const base = await server.listening;
  const auth = { authorization: `Bearer ${KEY}` };
  const me = (await fetch(`${base}/api/users/@me/`, { headers: auth }).then((r) => r.json())) as {
    team: { id: number };
  };
  const linesBefore = server.output().stdout.split('\n').length;

  // Half on a capture route (the longer deadline), half on an API route with a valid key.
  const clients: RawClient[] = [];
  for (let i = 0; i < SLOW; i++) {
    const client = await openRaw(base);
    if (i % 2) trickle(client, '/batch/', 10_000, 1_000);
    else trickle(client, `/api/projects/${me.team.id}/dashboards/`, 10_000, 1_000, auth);
    clients.push(client);
  }
  const endless: RawClient[] = [];
  for (let i = 0; i < ENDLESS; i++) {
    const client = await openRaw(base);
    const path = i % 2 ? '/batch/' : `/api/projects/${me.team.id}/dashboards/`;
    trickle(client, path, 10_000_000, 250, auth, ' '.repeat(100));
    endless.push(client);
  }
  clients.push(...endless);
  const opened = Date.now();

  // While they trickle, the health check and an authenticated call answer.
  const health: number[] = [];
  const calls: number[] = [];
  while (Date.now() - opened < 4_000) {
    let t0 = performance.now();
    const h = await fetch(`${base}/_health`);
    await h.arrayBuffer();
    health.push(performance.now() - t0);
    t0 = performance.now();
    const c = await fetch(`${base}/api/users/@me/`, { headers: auth });
    await c.arrayBuffer();
    if (c.status === 200) calls.push(performance.now() - t0);
    await sleep(100);
  }
  t.ok(health.length >= 10, `/_health answered ${health.length} times while the slow sockets were open`);
  t.equal(calls.length, health.length, 'every authenticated call answered 200');
  const worst = Math.round(Math.max(...health, ...calls));
  t.ok(worst < 1000, `the slowest of them took ${worst} ms`);

  // Every socket is closed by the server within the capture deadline (and some slack for the sweep).
  const within = 6_000 + 4_000;
  const closed = await Promise.all(clients.map((c) => Promise.race([c.closed, sleep(within + 5_000).then(() => -1)])));
  const open = closed.filter((ms) => ms < 0).length;
  t.equal(open, 0, `no slow socket was left open (${SOCKETS - open} of ${SOCKETS} closed)`);
  const slowest = Math.max(...closed);
  t.ok(slowest >= 0 && slowest <= within, `the last was closed ${slowest} ms after opening`);
  const endlessClosed = await Promise.all(endless.map((c) => c.closed));
  t.ok(
    endlessClosed.every((ms) => ms >= 3_500),
    `steady bodies ran to their deadline (first closed after ${Math.min(...endlessClosed)} ms)`,
  );
  const answered = clients.filter((c) => c.received().startsWith('HTTP/1.1 408')).length;
  t.ok(answered > 0, `${answered} were answered 408 in the error shape before being closed`);

  // One line per cause at once, then a summary when the interval ends; not one line per socket.
  await sleep(3_500);
  const lines = server
    .output()
    .stdout.split('\n')
    .slice(linesBefore - 1);
  t.ok(lines.length < 20, `the log grew by ${lines.length} lines for ${SOCKETS} cut-off sockets`);
  const counted = lines
    .filter((l) => l.includes('"cut_off"') || l.includes('"cause"'))
    .map((l) => JSON.parse(l) as { cause?: string; cut_off?: Record<string, number> })
    .reduce((n, l) => n + (l.cause ? 1 : Object.values(l.cut_off ?? {}).reduce((a, b) => a + b, 0)), 0);
  t.equal(counted, SOCKETS, 'the lines account for every cut-off socket');
});
