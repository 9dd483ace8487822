import t from 'tap';
import { gzipSync } from 'node:zlib';
import { PostHog } from 'posthog-node';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import { storedEvents } from '../helpers/events.js';

// What PostHog's clients call outside the resources this server keeps: each answers as PostHog
// answers a project that does not use it, never a 404.
const ctx = await buildTestApp(t);
const { call, db } = ctx;
const ORIGIN = 'http://127.0.0.1:4567';
const EMPTY = { flags: [], group_type_mapping: {}, cohorts: {} };

t.test('surveys_retrieve: no surveys, with CORS, and the token errors of PostHog', async (t) => {
  const a = await makeTenant(db);
  const res = await call('surveys_retrieve', { query: { token: a.project.api_token }, headers: { origin: ORIGIN } });
  t.equal(res.status, 200);
  t.same(res.body, { surveys: [], survey_config: null });
  t.equal(res.headers['access-control-allow-origin'], ORIGIN, 'the browser may read it');

  const preflight = await ctx.inject({
    method: 'OPTIONS',
    url: '/api/surveys/',
    headers: { origin: ORIGIN, 'access-control-request-method': 'GET' },
  });
  t.equal(preflight.statusCode, 200);
  t.equal(preflight.headers['access-control-allow-origin'], ORIGIN);

  const none = await call('surveys_retrieve', { headers: { origin: ORIGIN } });
  t.match(none, { status: 401, body: { type: 'authentication_error', code: 'missing_api_key' } });
  t.equal(none.headers['access-control-allow-origin'], ORIGIN);
  const wrong = await call('surveys_retrieve', { query: { token: 'phc_nobody' } });
  t.match(wrong, { status: 401, body: { code: 'invalid_api_key' } });
});

t.test('flag_definitions_retrieve: empty definitions for a key that reaches the project', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const res = await call('flag_definitions_retrieve', { key: a.key, query: { token } });
  t.equal(res.status, 200);
  t.same(res.body, EMPTY);
  const etag = res.headers.etag as string;
  t.match(etag, /^W\/".+"$/, 'a weak ETag, as PostHog sends');
  const again = await call('flag_definitions_retrieve', {
    key: a.key,
    query: { token },
    headers: { 'if-none-match': etag },
  });
  t.equal(again.status, 304, 'unchanged definitions are not sent again');

  const readOnly = await makeMember(db, a, 1, ['feature_flag:read']);
  t.equal((await call('flag_definitions_retrieve', { key: readOnly.key, query: { token } })).status, 200);
  const writer = await makeMember(db, a, 1, ['feature_flag:write']);
  t.equal(
    (await call('flag_definitions_retrieve', { key: writer.key, query: { token } })).status,
    200,
    'write implies read',
  );
});

t.test('flag_definitions_retrieve: who is refused, and how', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const token = a.project.api_token;
  t.match(await call('flag_definitions_retrieve', { query: { token } }), {
    status: 401,
    body: { type: 'authentication_error', code: 'not_authenticated' },
  });
  t.match(await call('flag_definitions_retrieve', { key: 'phx_not_a_key', query: { token } }), {
    status: 401,
    body: { code: 'authentication_failed' },
  });
  t.match(await call('flag_definitions_retrieve', { key: a.key, query: { token: 'phc_nobody' } }), {
    status: 401,
    body: { code: 'invalid_api_key' },
  });
  t.match(await call('flag_definitions_retrieve', { key: a.key, query: { token: '' } }), {
    status: 401,
    body: { code: 'missing_api_key' },
  });
  // The tenant wall: another organization's key, for this project's token.
  t.match(await call('flag_definitions_retrieve', { key: b.key, query: { token } }), {
    status: 403,
    body: { code: 'permission_denied' },
  });
  const queryOnly = await makeMember(db, a, 1, ['query:read']);
  t.match(await call('flag_definitions_retrieve', { key: queryOnly.key, query: { token } }), {
    status: 403,
    body: { detail: "API key missing required scope 'feature_flag:read'" },
  });
  const other = await makeProject(db, a);
  const scoped = await makeKey(db, a.user, ['*'], { scoped_teams: [other.id] });
  t.equal(
    (await call('flag_definitions_retrieve', { key: scoped, query: { token } })).status,
    403,
    'a key scoped elsewhere',
  );
  t.equal(
    (await call('flag_definitions_retrieve', { key: scoped, query: { token: other.api_token } })).status,
    200,
    'and the project it is scoped to',
  );
});

t.test('feature_flag_local_evaluation_retrieve: the legacy path, with or without token and slash', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const withToken = await call('feature_flag_local_evaluation_retrieve', {
    key: a.key,
    query: { token: a.project.api_token },
  });
  t.same(withToken.body, EMPTY);
  const current = await call('feature_flag_local_evaluation_retrieve', { key: a.key });
  t.equal(current.status, 200, "without a token, the key's current project");
  const slash = await ctx.inject({
    method: 'GET',
    url: `/api/feature_flag/local_evaluation/?token=${a.project.api_token}`,
    headers: { authorization: `Bearer ${a.key}` },
  });
  t.equal(slash.statusCode, 200);
  t.equal(
    (await call('feature_flag_local_evaluation_retrieve', { key: b.key, query: { token: a.project.api_token } }))
      .status,
    403,
  );
});

t.test('posthog-node evaluates locally against the server without an error or a retry', async (t) => {
  const a = await makeTenant(db);
  const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const requests: string[] = [];
  const errors: unknown[] = [];
  const client = new PostHog(a.project.api_token, {
    host: address,
    personalApiKey: a.key,
    flushAt: 1,
    flushInterval: 0,
    fetchRetryCount: 0,
    fetch: (url: string, options: object) => {
      requests.push(new URL(url).pathname);
      return fetch(url, options as RequestInit);
    },
  });
  client.on('error', (e) => errors.push(e));
  t.teardown(() => client.shutdown());
  const value = await client.getFeatureFlag('new-checkout', 'user-1', { onlyEvaluateLocally: true });
  t.equal(value, undefined, 'no flag of that key exists');
  await client.getAllFlags('user-1', { onlyEvaluateLocally: true });
  t.same(errors, [], 'no error was reported');
  t.equal(requests.filter((p) => p === '/flags/definitions').length, 1, 'the definitions were fetched once');

  const wrong = new PostHog(a.project.api_token, {
    host: address,
    personalApiKey: 'phx_wrong',
    fetchRetryCount: 0,
  });
  const wrongErrors: unknown[] = [];
  wrong.on('error', (e) => wrongErrors.push(e));
  t.teardown(() => wrong.shutdown());
  await wrong.getFeatureFlag('new-checkout', 'user-1', { onlyEvaluateLocally: true });
  t.match(String(wrongErrors[0]), /invalid/, 'an invalid key is reported as posthog-node reports a 401');
});

t.test('capture_s_create: snapshots are accepted and dropped', async (t) => {
  const a = await makeTenant(db);
  const body = {
    api_key: a.project.api_token,
    batch: [
      { event: '$snapshot', distinct_id: 'd1', properties: { $snapshot_data: [{ type: 2 }], $session_id: 's1' } },
    ],
  };
  const res = await call('capture_s_create', { body, headers: { origin: ORIGIN } });
  t.same(res.body, { status: 1 });
  t.equal(res.headers['access-control-allow-origin'], ORIGIN);
  const gz = await call('capture_s_create', {
    query: { compression: 'gzip-js' },
    payload: gzipSync(JSON.stringify(body)),
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(gz.status, 200, 'gzip, as posthog-js sends it');
  t.same(await storedEvents(db, a.project.id), [], 'nothing was stored');
  t.match(await call('capture_s_create', { body: { ...body, api_key: 'phc_nobody' } }), {
    status: 401,
    body: { code: 'invalid_api_key' },
  });
  t.match(await call('capture_s_create', { body: { batch: body.batch } }), {
    status: 401,
    body: { code: 'missing_api_key' },
  });
  t.equal(
    (await call('capture_s_create', { payload: '{nope', headers: { 'content-type': 'application/json' } })).status,
    400,
  );
});
