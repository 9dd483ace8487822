// TRUST_PROXY: behind the proxies it names, X-Forwarded-For is the client (events' $ip) and
// X-Forwarded-Proto/Host the base of `next` links and of the contract's `servers`; from anyone else, and
// without it, those headers are ignored. Requests arrive from 127.0.0.1 (light-my-request's address).
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { buildTestApp, json, type TestContext } from './helpers/app.js';
import { storedEvents } from './helpers/events.js';
import { makeTenant, type Tenant } from './helpers/factories.js';

const FORWARDED = {
  'x-forwarded-for': '203.0.113.7',
  'x-forwarded-proto': 'https',
  'x-forwarded-host': 'analytics.example.com',
};

async function setUp(t: Test, trustProxy: string[] | number) {
  const ctx = await buildTestApp(t, { trustProxy });
  const tenant = await makeTenant(ctx.db);
  return { ctx, tenant };
}

/** The $ip stored for one event captured with `headers`. */
async function capturedIp(ctx: TestContext, tenant: Tenant, headers: Record<string, string>) {
  const res = await ctx.call('capture_batch_create', {
    payload: gzipSync(
      JSON.stringify({ api_key: tenant.project.api_token, batch: [{ event: 'seen', distinct_id: 'u1' }] }),
    ),
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...headers },
  });
  if (res.status !== 200) throw new Error(`capture: ${res.status} ${res.raw}`);
  const [event] = (await storedEvents(ctx.db, tenant.project.id)).slice(-1);
  return (event!.properties as Record<string, unknown>).$ip;
}

/** The `next` link of a dashboards page of one, with two dashboards. */
async function nextLink(ctx: TestContext, tenant: Tenant, headers: Record<string, string>) {
  const params = { project_id: tenant.project.id };
  for (const name of ['a', 'b']) {
    if ((await ctx.call('dashboards_create', { key: tenant.key, params, body: { name } })).status !== 201)
      throw new Error('dashboard not created');
  }
  const res = await ctx.call('dashboards_list', { key: tenant.key, params, query: { limit: '1' }, headers });
  return json<'dashboards_list'>(res).next;
}

t.test('behind a trusted proxy: the forwarded client, scheme and host', async (t) => {
  const { ctx, tenant } = await setUp(t, ['127.0.0.1']);
  t.equal(await capturedIp(ctx, tenant, FORWARDED), '203.0.113.7', '$ip is the X-Forwarded-For client');
  t.equal(
    await capturedIp(ctx, tenant, { 'x-forwarded-for': '198.51.100.9, 10.1.2.3' }),
    '10.1.2.3',
    'the nearest untrusted hop, never an address a client wrote further left',
  );
  t.equal(await capturedIp(ctx, tenant, {}), '127.0.0.1', 'without the header: the proxy itself');
  const next = await nextLink(ctx, tenant, FORWARDED);
  t.match(next, /^https:\/\/analytics\.example\.com\/api\/projects\/\d+\/dashboards\/\?limit=1&offset=1$/);
  const schema = await ctx.inject({ method: 'GET', url: '/api/schema/?format=json', headers: FORWARDED });
  t.same(JSON.parse(schema.body).servers?.[0]?.url, 'https://analytics.example.com', "the contract's servers");
});

t.test('a trusted CIDR works as an address does', async (t) => {
  const { ctx, tenant } = await setUp(t, ['127.0.0.0/8']);
  t.equal(await capturedIp(ctx, tenant, FORWARDED), '203.0.113.7');
});

t.test('a hop count: that many of the nearest addresses are proxies', async (t) => {
  const chain = { 'x-forwarded-for': '198.51.100.9, 10.1.2.3' };
  const one = await setUp(t, 1);
  t.equal(await capturedIp(one.ctx, one.tenant, chain), '10.1.2.3', 'one hop: the last forwarded address');
  t.equal(await capturedIp(one.ctx, one.tenant, FORWARDED), '203.0.113.7');
  t.match(await nextLink(one.ctx, one.tenant, FORWARDED), /^https:\/\/analytics\.example\.com\//);
  const two = await setUp(t, 2);
  t.equal(await capturedIp(two.ctx, two.tenant, chain), '198.51.100.9', 'two hops: one further left');
  t.equal(
    await capturedIp(two.ctx, two.tenant, FORWARDED),
    '203.0.113.7',
    'a chain shorter than the count: its furthest address',
  );
});

t.test('without TRUST_PROXY the headers are ignored', async (t) => {
  const { ctx, tenant } = await setUp(t, []);
  t.equal(await capturedIp(ctx, tenant, FORWARDED), '127.0.0.1', '$ip is the connection address');
  const next = await nextLink(ctx, tenant, FORWARDED);
  t.match(next, /^http:\/\/localhost(:\d+)?\/api\/projects\/\d+\/dashboards\/\?limit=1&offset=1$/);
});

t.test('from an address TRUST_PROXY does not name, the headers are ignored too', async (t) => {
  const { ctx, tenant } = await setUp(t, ['10.0.0.0/8']);
  t.equal(await capturedIp(ctx, tenant, FORWARDED), '127.0.0.1');
  const next = await nextLink(ctx, tenant, FORWARDED);
  t.notMatch(next, /analytics\.example\.com|https:/);
});
