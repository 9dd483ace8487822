import t from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const ORIGIN = 'http://127.0.0.1:4567';
const distFile = (name: string) => readFileSync(createRequire(import.meta.url).resolve(`posthog-js/dist/${name}`));
const UUID = /^[0-9a-f-]{36}$/;
const SDK_VERSION = (
  JSON.parse(readFileSync(createRequire(import.meta.url).resolve('posthog-js/package.json'), 'utf8')) as {
    version: string;
  }
).version;

t.test('flags_create answers v2 with no flags and CORS for the caller', async (t) => {
  const a = await makeTenant(db);
  const res = await call('flags_create', {
    query: { v: 2 },
    body: { token: a.project.api_token, distinct_id: 'd1' },
    headers: { origin: ORIGIN },
  });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), ['errorsWhileComputingFlags', 'flags', 'requestId']);
  t.match(res.body, { errorsWhileComputingFlags: false, flags: {}, requestId: UUID });
  t.equal(res.headers['access-control-allow-origin'], ORIGIN);
  t.equal(res.headers['access-control-allow-credentials'], 'true');

  const legacy = await call('flags_create', { body: { api_key: a.project.api_token } });
  t.same(Object.keys(legacy.body).sort(), [
    'errorsWhileComputingFlags',
    'featureFlagPayloads',
    'featureFlags',
    'requestId',
  ]);

  const withConfig = await call('flags_create', {
    query: { v: 2, config: true },
    body: { token: a.project.api_token },
  });
  t.match(withConfig.body, {
    flags: {},
    autocapture_opt_out: false,
    heatmaps: false,
    sessionRecording: false,
    supportedCompression: ['gzip', 'gzip-js'],
  });

  const gz = await call('flags_create', {
    query: { v: 2, compression: 'gzip-js' },
    payload: gzipSync(JSON.stringify({ token: a.project.api_token })),
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(gz.status, 200, 'a gzip body as posthog-js sends it');

  const viaQuery = await call('flags_retrieve', { query: { v: 2, token: a.project.api_token } });
  t.equal(viaQuery.status, 200, 'a GET names the token in the query');

  const none = await call('flags_create', { query: { v: 2 }, body: { distinct_id: 'x' }, headers: { origin: ORIGIN } });
  t.match(none, { status: 401, body: { type: 'authentication_error', code: 'missing_api_key' } });
  t.equal(none.headers['access-control-allow-origin'], ORIGIN, 'errors carry CORS too, so the browser can read them');
  const wrong = await call('flags_create', { query: { v: 2 }, body: { token: 'phc_nobody' } });
  t.match(wrong, { status: 401, body: { code: 'invalid_api_key' } });
  const garbage = await call('flags_create', { payload: '{not json', headers: { 'content-type': 'application/json' } });
  t.equal(garbage.status, 400);
});

t.test('the CORS preflight of every browser route', async (t) => {
  const a = await makeTenant(db);
  for (const url of [
    '/flags/?v=2',
    '/decide/?v=3',
    `/array/${a.project.api_token}/config`,
    `/array/${a.project.api_token}/config.js`,
    '/e/',
  ]) {
    const res = await ctx.inject({
      method: 'OPTIONS',
      url,
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    t.equal(res.statusCode, 200, url);
    t.equal(res.headers['access-control-allow-origin'], ORIGIN, url);
    t.match(res.headers['access-control-allow-headers'], /Content-Type/i, url);
  }
});

t.test('decide_create answers each version in its shape, with the config', async (t) => {
  const a = await makeTenant(db);
  const body = { token: a.project.api_token, distinct_id: 'd' };
  const v4 = await call('decide_create', { query: { v: 4 }, body, headers: { origin: ORIGIN } });
  t.match(v4.body, {
    flags: {},
    errorsWhileComputingFlags: false,
    config: { enable_collect_everything: true },
    autocapture_opt_out: false,
  });
  t.notOk('featureFlags' in v4.body);
  t.equal(v4.headers['access-control-allow-origin'], ORIGIN);
  const v3 = await call('decide_create', { query: { v: 3 }, body });
  t.match(v3.body, {
    featureFlags: {},
    featureFlagPayloads: {},
    isAuthenticated: false,
    toolbarParams: {},
    siteApps: [],
  });
  t.notOk('flags' in v3.body);
  t.same((await call('decide_create', { query: { v: 2 }, body })).body.featureFlags, {});
  t.same((await call('decide_create', { body })).body.featureFlags, []);
  t.equal((await call('decide_retrieve', { query: { v: 3 } })).status, 401);
});

t.test('array_config_retrieve follows the project settings', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('array_config_retrieve', {
    params: { token: a.project.api_token },
    headers: { origin: ORIGIN },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    token: a.project.api_token,
    autocapture_opt_out: false,
    heatmaps: false,
    hasFeatureFlags: false,
    sessionRecording: false,
    surveys: false,
    elementsChainAsString: true,
    analytics: { endpoint: '/i/v0/e/' },
    siteApps: [],
  });
  t.equal(res.headers['access-control-allow-origin'], ORIGIN);
  await call('projects_partial_update', {
    key: a.key,
    params: { id: a.project.id },
    body: { autocapture_opt_out: true, heatmaps_opt_in: true },
  });
  const after = await call('array_config_retrieve', { params: { token: a.project.api_token } });
  t.match(after.body, { autocapture_opt_out: true, heatmaps: true });
  const other = await call('array_config_retrieve', { params: { token: b.project.api_token } });
  t.match(other.body, { autocapture_opt_out: false, heatmaps: false }, "another project's settings are its own");
  t.match(await call('array_config_retrieve', { params: { token: 'phc_nobody' } }), {
    status: 404,
    body: { code: 'not_found' },
  });
  for (const token of ['\u0000', 'x'.repeat(5000)]) {
    t.equal(
      (await call('array_config_retrieve', { params: { token } })).status,
      404,
      'a token no project can have is not looked up',
    );
  }
  const nul = await call('flags_create', { body: { token: 'phc_\u0000' } });
  t.match(nul, { status: 401, body: { code: 'invalid_api_key' } });
});

t.test('array_config_js_retrieve and array_js_retrieve hand the config to posthog-js', async (t) => {
  const a = await makeTenant(db);
  await call('projects_partial_update', { key: a.key, params: { id: a.project.id }, body: { heatmaps_opt_in: true } });
  const res = await call('array_config_js_retrieve', { params: { token: a.project.api_token } });
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^application\/javascript/);
  // Run the script as a browser would, against a window of its own.
  const window: { _POSTHOG_REMOTE_CONFIG?: Record<string, { config: Record<string, unknown>; siteApps: unknown[] }> } =
    {};
  new Function('window', res.raw)(window);
  const loaded = window._POSTHOG_REMOTE_CONFIG?.[a.project.api_token];
  t.match(loaded, { config: { token: a.project.api_token, heatmaps: true, autocapture_opt_out: false }, siteApps: [] });
  t.notOk(loaded && 'siteApps' in loaded.config, 'the site apps are beside the config, not in it');
  t.equal((await call('array_config_js_retrieve', { params: { token: 'phc_nobody' } })).status, 404);

  const bundle = await call('array_js_retrieve', { params: { token: a.project.api_token } });
  t.ok(bundle.raw.startsWith(distFile('array.js').toString('utf8')), 'posthog-js comes first');
  t.ok(bundle.raw.endsWith(res.raw), 'then the config script');
});

t.test('static_retrieve serves the installed posthog-js bundles', async (t) => {
  for (const file of ['array.js', 'array.full.js']) {
    const res = await call('static_retrieve', { params: { file } });
    t.equal(res.status, 200, file);
    t.match(res.headers['content-type'], /^application\/javascript/);
    t.equal(res.headers['cache-control'], 'public, max-age=3600');
    t.ok(res.raw === distFile(file).toString('utf8'), `${file} is the package's file, byte for byte`);
    const again = await call('static_retrieve', {
      params: { file },
      headers: { 'if-none-match': String(res.headers.etag) },
    });
    t.equal(again.status, 304, 'a cached copy is confirmed without a body');
    t.equal(again.raw, '');
  }
  for (const file of ['nope.js', '..%2Fpackage.json', 'array.js.map', '.env']) {
    t.equal((await call('static_retrieve', { params: { file } })).status, 404, file);
  }
  const versioned = await call('static_versioned_retrieve', {
    params: { version: SDK_VERSION, file: 'surveys.js' },
    headers: { origin: ORIGIN },
  });
  t.equal(versioned.status, 200);
  t.ok(versioned.raw === distFile('surveys.js').toString('utf8'), 'the lazily loaded extension of this version');
  t.equal(versioned.headers['access-control-allow-origin'], ORIGIN, 'posthog-js loads it as a CORS script');
  t.equal(versioned.headers['cache-control'], 'public, max-age=86400, immutable');
  const older = await call('static_versioned_retrieve', {
    params: { version: '1.0.0', file: 'surveys.js' },
    headers: { origin: ORIGIN },
  });
  t.equal(older.status, 404, 'another version is not here: posthog-js falls back to the unversioned path');
  t.equal(older.headers['access-control-allow-origin'], ORIGIN, 'and can read that 404');
  const traversal = await ctx.inject({ method: 'GET', url: '/static/../package.json' });
  t.equal(traversal.statusCode, 404);
});
