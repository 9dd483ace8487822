// Secrets stay out of the logs: key values (the bootstrap key included), keys in the query string,
// sharing tokens, and the parameters that database errors carry. The app logs at trace level with the
// server's own logger settings into memory, and the whole log is searched.
import t from 'tap';
import { buildApp } from '../src/app.js';
import { bootstrap } from '../src/bootstrap.js';
import { loadConfig } from '../src/config.js';
import { loggerOptions, redactUrl, serializeError } from '../src/http/logging.js';
import { openTestDatabase } from './helpers/db.js';

const BOOT = 'phx_bootstrapsecretthatmustneverbelogged0123456789';
const lines: string[] = [];
const stream = { write: (line: string) => void lines.push(line) };

const test = await openTestDatabase();
await bootstrap(test.database.db, { email: 'admin@example.com', apiKey: BOOT });
const app = await buildApp({
  config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }),
  database: test.database,
  logger: { ...loggerOptions('trace'), stream },
});
t.teardown(async () => {
  await app.close();
  await test.database.close();
  await test.drop();
});

async function api(method: string, url: string, key: string | null, body?: unknown) {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

t.test('no key value, sharing token or query-string key is logged', async (t) => {
  t.equal((await api('GET', '/api/organizations/', BOOT)).status, 200);
  const created = await api('POST', '/api/personal_api_keys/', BOOT, { label: 'logged?', scopes: ['*'] });
  t.equal(created.status, 201);
  const first: string = created.body.value;
  const rolled = await api('POST', `/api/personal_api_keys/${created.body.id}/roll/`, BOOT);
  t.equal(rolled.status, 200);
  const second: string = rolled.body.value;
  t.not(first, second);

  t.equal((await api('GET', `/api/projects/@current/?personal_api_key=${second}`, null)).status, 200);
  t.equal(
    (await api('GET', `/api/users/@me/?limit=1&personal_api_key=${encodeURIComponent(BOOT)}&x=1`, null)).status,
    200,
  );
  t.equal(
    (await api('GET', `/api/organizations/?personal_api_key=${first}`, null)).status,
    401,
    'the rolled-away value is refused',
  );
  t.equal((await api('GET', '/api/organizations/', first)).status, 401);

  const dashboard = await api('POST', '/api/projects/@current/dashboards/', second, { name: 'Shared' });
  const sharing = await api('PATCH', `/api/projects/@current/dashboards/${dashboard.body.id}/sharing/`, second, {
    enabled: true,
  });
  const token: string = sharing.body.access_token;
  t.match(token, /^[\w-]{20,}$/);
  t.equal((await api('GET', `/shared/${token}`, null)).status, 200);

  const log = lines.join('');
  t.ok(lines.length >= 20, `the log is not empty (${lines.length} lines)`);
  t.match(
    log,
    /"url":"\/api\/projects\/@current\/\?personal_api_key=\[redacted\]"/,
    'the query-string key is replaced',
  );
  t.match(log, /"url":"\/api\/users\/@me\/\?limit=1&personal_api_key=\[redacted\]&x=1"/, 'other parameters stay');
  t.match(log, /"url":"\/shared\/\[redacted\]"/, 'the sharing token in the path is replaced');
  for (const [name, secret] of Object.entries({ bootstrap: BOOT, created: first, rolled: second, sharing: token })) {
    t.notOk(log.includes(secret), `the ${name} value is not in the log`);
  }
  t.notMatch(log, /phx_[A-Za-z0-9]{20,}/, 'no key-shaped value at all');
});

t.test('logged errors lose the query parameters drizzle puts in their messages', async (t) => {
  const cause = Object.assign(new Error('duplicate key'), { code: '23505' });
  const err = Object.assign(
    new Error(`Failed query: insert into sharing_configurations values ($1)\nparams: tokenvalue123,${BOOT}`, { cause }),
    { params: ['tokenvalue123', BOOT] },
  );
  const logged = serializeError(err);
  const text = JSON.stringify(logged);
  t.notOk(text.includes('tokenvalue123'));
  t.notOk(text.includes(BOOT));
  t.match(logged.message, /Failed query: insert into sharing_configurations/, 'the query itself is kept');
  t.equal(logged.cause?.code, '23505', 'the cause is kept');
});

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('/api/x/?personal_api_key=phx_abc'), '/api/x/?personal_api_key=[redacted]');
  t.equal(redactUrl('/api/x/?a=1&personal%5Fapi%5Fkey=phx_abc'), '/api/x/?a=1&personal%5Fapi%5Fkey=[redacted]');
  t.equal(redactUrl('/shared/abcDEF_123?x=1'), '/shared/[redacted]?x=1');
  t.equal(redactUrl('/api/organizations/'), '/api/organizations/');
});
