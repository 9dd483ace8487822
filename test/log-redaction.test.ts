// Credentials that arrive inside a URL path never reach the log: key-shaped segments (`phx_…`,
// `phc_…`, however a client puts them there) and the invite id of a sign-up URL. The app logs with the
// server's own logger settings into memory, and the whole log is searched.
import t from 'tap';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { loggerOptions, redactUrl } from '../src/http/logging.js';
import { openTestDatabase } from './helpers/db.js';
import { makeInvite, makeTenant } from './helpers/factories.js';

const lines: string[] = [];
const stream = { write: (line: string) => void lines.push(line) };

const test = await openTestDatabase();
const app = await buildApp({
  config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }),
  database: test.database,
  logger: { ...loggerOptions('debug'), stream },
});
t.teardown(async () => {
  await app.close();
  await test.database.close();
  await test.drop();
});

t.test('keys in a path and sign-up invite ids are not logged', async (t) => {
  const tenant = await makeTenant(test.database.db);
  const invite = await makeInvite(test.database.db, tenant);
  const other = await makeInvite(test.database.db, tenant);
  const auth = { authorization: `Bearer ${tenant.key}` };
  const projectToken = tenant.project.api_token;
  t.match(projectToken, /^phc_/);

  const requests: [string, string, number][] = [
    ['GET', `/api/signup/${invite.id}/`, 200],
    ['GET', `/api/signup/${invite.id.toUpperCase()}`, 200],
    ['POST', `/api/signup/${other.id}/`, 201],
    ['GET', `/api/personal_api_keys/${tenant.key}/`, 404],
    ['GET', `/api/personal_api_keys/${tenant.key.replace('_', '%5F')}/`, 404],
    ['GET', `/api/projects/${projectToken}/`, 404],
    ['GET', `/api/projects/@current/?note=${tenant.key}`, 200],
    ['GET', `/nowhere/${tenant.key}/${projectToken}`, 404],
  ];
  for (const [method, url, status] of requests) {
    // Sign-up is called as a new user would, without a key.
    const res = await app.inject({ method: method as 'GET', url, headers: url.startsWith('/api/signup/') ? {} : auth });
    t.equal(res.statusCode, status, `${method} ${url.replace(/ph[xc](_|%5F)\w+/g, '…')}`);
  }

  const log = lines.join('');
  t.ok(lines.length >= requests.length, 'requests were logged');
  t.match(log, /"url":"\/api\/signup\/\[redacted\]\/"/, 'the sign-up path keeps its shape');
  t.match(log, /"url":"\/api\/personal_api_keys\/phx_\[redacted\]\/"/, 'a key in the path is replaced');
  for (const [name, secret] of Object.entries({
    'invite id': invite.id,
    'upper-case invite id': invite.id.toUpperCase(),
    'accepted invite id': other.id,
    'key value': tenant.key.slice(4),
    'project token': projectToken.slice(4),
  })) {
    t.notOk(log.includes(secret), `the ${name} is not in the log`);
  }
});

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('/api/signup/0b7c3a52-0bd1-4bd6-9f0a-2d3c4e5f6a7b/?x=1'), '/api/signup/[redacted]/?x=1');
  t.equal(redactUrl('/api/personal_api_keys/phx_abc123/roll/'), '/api/personal_api_keys/phx_[redacted]/roll/');
  t.equal(redactUrl('/api/x/phx%5Fabc123/'), '/api/x/phx_[redacted]/');
  t.equal(redactUrl('/api/projects/phc_tok3n/?a=phx_zz&b=2'), '/api/projects/phc_[redacted]/?a=phx_[redacted]&b=2');
  t.equal(
    redactUrl('/api/projects/2/dashboards/?limit=5'),
    '/api/projects/2/dashboards/?limit=5',
    'nothing else changes',
  );
});
