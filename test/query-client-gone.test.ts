// A client that leaves while its query runs (a closed tab, a load generator stopping) is not a server
// error: nobody reads the answer, and the log must not fill with error lines an operator would chase.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import t, { type Test } from 'tap';
import { adminClient, createTestDatabase } from './helpers/db.js';
import { startServer } from './helpers/server-process.js';

/** A spawned server (its own database) whose first project holds `events` captured events. */
async function serverWithEvents(t: Test, events: number, env: Record<string, string> = {}) {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const key = `phx_${randomBytes(20).toString('hex')}`;
  const server = startServer({ DATABASE_URL: database.url, BOOTSTRAP_API_KEY: key, RATE_LIMITS: 'off', ...env });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const me = (await (await fetch(`${base}/api/users/@me/`, { headers })).json()) as {
    team: { id: number; api_token: string };
  };
  const batch = Array.from({ length: events }, (_, i) => ({ event: 'e', distinct_id: `u${i}`, properties: {} }));
  const captured = await fetch(`${base}/batch/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: me.team.api_token, batch }),
  });
  t.equal(captured.status, 200);
  return { database, server, base, headers, me };
}

t.test('a query whose client left is not logged as an unhandled error', async (t) => {
  const { database, server, base, headers, me } = await serverWithEvents(t, 300);

  const query = (text: string) =>
    JSON.stringify({ query: { kind: 'HogQLQuery', query: text }, refresh: 'force_blocking' });
  const path = `/api/projects/${me.team.id}/query/`;
  // 27 million joined rows: seconds of work, long after the client has gone.
  const slow = query('select count() from events a cross join events b cross join events c');
  for (let i = 0; i < 3; i++) {
    await new Promise<void>((resolve) => {
      const req = http.request(`${base}${path}`, { method: 'POST', headers }, () => {});
      req.on('error', () => resolve());
      req.end(slow);
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 300);
    });
  }
  // The queries finish or are stopped; then the server answers as ever.
  let status = 0;
  for (const end = Date.now() + 60_000; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: query('select 1') });
    status = res.status;
    const active = await fetch(`${base}/api/projects/${me.team.id}/query/`, {
      method: 'POST',
      headers,
      body: query("select count() from events where event = 'e'"),
    });
    if (status === 200 && active.status === 200 && !/cross join/.test(await activeQueries(database.url))) break;
  }
  t.equal(status, 200, 'the server answers');
  await new Promise((r) => setTimeout(r, 500));
  const log = server.output().stdout + server.output().stderr;
  t.notMatch(log, /unhandled error/, 'no unhandled error was logged');
  t.notMatch(log, /"level":50/, 'nothing was logged as an error');
});

t.test('the statement of a query whose client left is cancelled, and the organization can query again', async (t) => {
  // A long timeout, so that a statement still running seconds after its client left was not cancelled by it.
  const { database, server, base, headers, me } = await serverWithEvents(t, 1000, {
    QUERY_TIMEOUT_SECONDS: '120',
    REQUEST_DEADLINE_SECONDS: '150',
  });
  const path = `${base}/api/projects/${me.team.id}/query/`;
  // A billion joined rows: minutes of work for PostgreSQL.
  const slow = JSON.stringify({
    query: { kind: 'HogQLQuery', query: 'select count() from events a cross join events b cross join events c' },
    refresh: 'force_blocking',
  });
  const req = http.request(path, { method: 'POST', headers }, () => {});
  req.on('error', () => {});
  req.end(slow);
  let seen = false;
  for (const end = Date.now() + 10_000; !seen && Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    seen = /cross join/.test(await activeQueries(database.url));
  }
  t.ok(seen, 'the statement runs');
  req.destroy();
  const left = Date.now();
  let running = true;
  while (running && Date.now() - left < 30_000) {
    await new Promise((r) => setTimeout(r, 100));
    running = /cross join/.test(await activeQueries(database.url));
  }
  t.notOk(running, 'the statement is cancelled once its client left');
  t.ok(Date.now() - left < 10_000, `cancelled within 10 s (${Date.now() - left} ms)`);
  const res = await fetch(path, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'select 1' }, refresh: 'force_blocking' }),
  });
  t.equal(res.status, 200, 'the organization queries again');
  const log = server.output().stdout + server.output().stderr;
  t.notMatch(log, /"level":50/, 'nothing was logged as an error');
});

/** The statements running on the test's database now. */
async function activeQueries(url: string): Promise<string> {
  const sql = adminClient(url);
  try {
    const rows = await sql`select query from pg_stat_activity
      where datname = current_database() and state = 'active' and pid <> pg_backend_pid()`;
    return rows.map((r) => String(r.query)).join('\n');
  } finally {
    await sql.end();
  }
}
