// A spawned server configured as an operator puts it behind a load balancer: TRUST_PROXY makes the
// forwarded client the address of events, of the share-password throttle, and the forwarded scheme and
// host the base of `next` links and of the contract's `servers`; the balancer's X-Request-Id is answered
// and is on every log line of its request. SITE_URL, when set, names the server instead.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createTestDatabase } from './helpers/db.js';
import { startServer } from './helpers/server-process.js';

const database = await createTestDatabase();
t.teardown(() => database.drop());
const key = `phx_${randomBytes(20).toString('hex')}`;

const FORWARDED = {
  'x-forwarded-for': '203.0.113.7',
  'x-forwarded-proto': 'https',
  'x-forwarded-host': 'analytics.example.com',
};

t.test('TRUST_PROXY: the forwarded client, scheme and host; the request id in its log lines', async (t) => {
  const server = startServer({
    DATABASE_URL: database.url,
    BOOTSTRAP_API_KEY: key,
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: 'debug',
  });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;
  const call = async (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> }) => {
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? (init.body ? 'POST' : 'GET'),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
      body: init.body ? JSON.stringify(init.body) : undefined,
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  const project = (await call('/api/projects/@current/', {})).body as { id: number; api_token: string };
  const P = `/api/projects/${project.id}`;

  const captured = await call('/batch/', {
    body: { api_key: project.api_token, batch: [{ event: 'seen', distinct_id: 'u1' }] },
    headers: FORWARDED,
  });
  t.equal(captured.status, 200);
  const ips = await call(`${P}/query/`, {
    body: { query: { kind: 'HogQLQuery', query: "select properties.$ip from events where event = 'seen'" } },
  });
  t.same(ips.body.results, [['203.0.113.7']], "the event's $ip is the forwarded client");

  for (const name of ['a', 'b']) t.equal((await call(`${P}/dashboards/`, { body: { name } })).status, 201);
  const page = await call(`${P}/dashboards/?limit=1`, { headers: { ...FORWARDED, 'x-request-id': 'lb-4f2a.7' } });
  t.equal(page.body.next, `https://analytics.example.com${P}/dashboards/?limit=1&offset=1`, 'the forwarded base');
  t.equal(page.headers.get('x-request-id'), 'lb-4f2a.7', "the balancer's request id is answered");
  const schema = await call('/api/schema/?format=json', { headers: FORWARDED });
  t.same(schema.body.servers, [{ url: 'https://analytics.example.com', description: 'This server.' }]);

  const lines = server
    .output()
    .stdout.split('\n')
    .filter((line) => line.includes('lb-4f2a.7'))
    .map((line) => JSON.parse(line) as { reqId?: string; msg: string; req?: { remoteAddress: string } });
  t.same(
    lines.map((l) => l.msg),
    ['incoming request', 'request completed'],
    'the request is logged',
  );
  t.ok(
    lines.every((l) => l.reqId === 'lb-4f2a.7'),
    'with its id on every line',
  );
  t.equal(lines[0]?.req?.remoteAddress, '203.0.113.7', 'and the forwarded client');

  // The share-password throttle counts each forwarded client apart: one guessing is stopped, not the rest.
  const dashboard = (await call(`${P}/dashboards/`, { body: { name: 'locked' } })).body.id as number;
  const sharing = await call(`${P}/dashboards/${dashboard}/sharing/`, {
    method: 'PATCH',
    body: { enabled: true, password_required: true },
  });
  const token = sharing.body.access_token as string;
  const added = await call(`${P}/dashboards/${dashboard}/sharing/passwords/`, { body: { raw_password: 'right one' } });
  t.equal(added.status, 201);
  const guess = async (client: string) =>
    (await call(`/shared/${token}.json`, { body: { password: 'wrong' }, headers: { 'x-forwarded-for': client } }))
      .status;
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) statuses.push(await guess('198.51.100.1'));
  t.same(statuses, [...Array(20).fill(401), 429], 'the 21st guess in a minute from one client is refused');
  t.equal(await guess('198.51.100.2'), 401, 'another client behind the same proxy still may try');
});

t.test('SITE_URL names the server in the contract and the links, whatever the request', async (t) => {
  const server = startServer({
    DATABASE_URL: database.url,
    BOOTSTRAP_API_KEY: key,
    SITE_URL: 'https://posthog.example.org/',
  });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;
  const auth = { authorization: `Bearer ${key}` };
  for (const name of ['c', 'd']) {
    await fetch(`${base}/api/projects/@current/dashboards/`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
  }
  for (const path of ['/api/schema/?format=json', '/docs/json']) {
    const served = (await (await fetch(`${base}${path}`, { headers: FORWARDED })).json()) as { servers: unknown };
    t.same(served.servers, [{ url: 'https://posthog.example.org', description: 'This server.' }], path);
  }
  const page = (await (await fetch(`${base}/api/projects/@current/dashboards/?limit=1`, { headers: auth })).json()) as {
    next: string | null;
  };
  t.equal(page.next, 'https://posthog.example.org/api/projects/@current/dashboards/?limit=1&offset=1');
});
