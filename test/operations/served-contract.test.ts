import t from 'tap';
import { parse } from 'yaml';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

// The contract a server serves names that server, so "Try it out" and generated SDKs reach it; and
// every answer carries its request id.
const ctx = await buildTestApp(t);
const { inject, db } = ctx;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('the served contract names the server as the request reached it', async (t) => {
  const json = await inject({ url: '/api/schema/?format=json', headers: { host: 'api.example.com:8443' } });
  t.same(JSON.parse(json.body).servers, [{ url: 'http://api.example.com:8443', description: 'This server.' }]);
  const yaml = await inject({ url: '/api/schema/', headers: { host: 'localhost:9123' } });
  t.same(parse(yaml.body).servers, [{ url: 'http://localhost:9123', description: 'This server.' }]);
  t.equal(parse(yaml.body).info.title, 'PostHog-compatible management API', 'the rest of the contract is intact');
  const docs = await inject({ url: '/docs/json', headers: { host: 'docs.example.com' } });
  t.same(JSON.parse(docs.body).servers, [{ url: 'http://docs.example.com', description: 'This server.' }]);
  t.equal(Object.keys(JSON.parse(docs.body).paths).length, Object.keys(JSON.parse(json.body).paths).length);

  // A Host header changes only that caller's own copy, and is quoted, never spliced in as YAML.
  const odd = await inject({ url: '/api/schema/', headers: { host: 'a.example:80' } });
  t.same(parse(odd.body).servers, [{ url: 'http://a.example', description: 'This server.' }]);
});

t.test('SITE_URL wins over the request', async (t) => {
  const site = await buildTestApp(t, { siteUrl: 'https://analytics.example.org' });
  const json = await site.inject({ url: '/api/schema/?format=json', headers: { host: 'internal:8000' } });
  t.same(JSON.parse(json.body).servers, [{ url: 'https://analytics.example.org', description: 'This server.' }]);
  const docs = await site.inject({ url: '/docs/json' });
  t.equal(JSON.parse(docs.body).servers[0].url, 'https://analytics.example.org');
});

t.test('every answer carries X-Request-Id: the caller’s safe one, else a new one', async (t) => {
  const a = await makeTenant(db);
  const fresh = await inject({ url: '/_health' });
  t.match(fresh.headers['x-request-id'], UUID);
  const other = await inject({ url: '/_health' });
  t.not(other.headers['x-request-id'], fresh.headers['x-request-id'], 'one id per request');

  const given = await inject({ url: '/_health', headers: { 'x-request-id': 'lb-7f3a.42:edge-1' } });
  t.equal(given.headers['x-request-id'], 'lb-7f3a.42:edge-1', 'a proxy’s id is kept');
  for (const unsafe of ['has space', 'x'.repeat(129), 'new\u00e9line', 'a;b']) {
    const res = await inject({ url: '/_health', headers: { 'x-request-id': unsafe } });
    t.match(res.headers['x-request-id'], UUID, `replaced: ${unsafe.slice(0, 20)}`);
  }
  const denied = await inject({ url: '/api/projects/', headers: { 'x-request-id': 'req-1' } });
  t.equal(denied.statusCode, 401);
  t.equal(denied.headers['x-request-id'], 'req-1', 'errors carry it too');
  const missing = await inject({ url: '/no/such/path', headers: { 'x-request-id': 'req-2' } });
  t.equal(missing.headers['x-request-id'], 'req-2', 'and 404s');
  const capture = await inject({
    method: 'POST',
    url: '/e/',
    payload: { api_key: a.project.api_token, event: 'x', distinct_id: 'd' },
    headers: { 'x-request-id': 'req-3' },
  });
  t.equal(capture.statusCode, 200);
  t.equal(capture.headers['x-request-id'], 'req-3', 'and the capture endpoints');
});
