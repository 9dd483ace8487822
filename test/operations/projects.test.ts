import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

t.test('projects_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const second = await makeProject(db, a);
  const res = await call('projects_list', { key: a.key });
  t.equal(res.status, 200);
  t.same(
    res.body.results.map((p: { id: number }) => p.id),
    [a.project.id, second.id],
  );
  t.match(res.body.results[0], { organization: a.organization.id, api_token: /^phc_/, project_id: a.project.id });
  t.notOk(res.raw.includes(b.project.api_token), 'another organization’s projects are invisible');
  t.equal(res.body.count, 2);
  const past = await call('projects_list', { key: a.key, query: { offset: 5 } });
  t.same([past.body.count, past.body.results], [2, []], 'a page past the end still counts them all');
  t.equal((await call('projects_list')).status, 401);
  t.equal((await call('projects_list', { key: await makeKey(db, a.user, ['organization:read']) })).status, 403);
  const scoped = await makeKey(db, a.user, ['project:read'], { scoped_teams: [a.project.id] });
  const refused = await call('projects_list', { key: scoped });
  t.equal(refused.body.detail, 'API keys with scoped projects are only supported on project-based endpoints.');
  const bad = await call('projects_list', { key: a.key, query: { offset: 'x' as never } });
  t.match(bad.body, { type: 'validation_error', attr: 'offset' });
});

t.test('projects_create', async (t) => {
  const a = await makeTenant(db);
  const res = await call('projects_create', {
    key: a.key,
    body: { name: 'Web', timezone: 'Europe/Berlin', api_token: 'phc_mine', id: 7 },
  });
  t.equal(res.status, 201);
  t.match(res.body, {
    name: 'Web',
    timezone: 'Europe/Berlin',
    organization: a.organization.id,
    effective_membership_level: 15,
  });
  t.not(res.body.api_token, 'phc_mine', 'read-only fields are ignored');
  const listed = await call('projects_retrieve', { key: a.key, params: { id: res.body.id } });
  t.equal(listed.status, 200, 'the new project is reachable at once');
  const tz = await call('projects_create', { key: a.key, body: { name: 'X', timezone: 'Mars/Olympus' } });
  t.same(tz.body, {
    type: 'validation_error',
    code: 'invalid_choice',
    detail: '"Mars/Olympus" is not a valid choice.',
    attr: 'timezone',
  });
  const long = await call('projects_create', { key: a.key, body: { name: 'x'.repeat(201) } });
  t.match(long.body, { code: 'max_length', attr: 'name' });
  const member = await makeMember(db, a, 1);
  const denied = await call('projects_create', { key: member.key, body: { name: 'Nope' } });
  t.equal(denied.body.detail, 'Your organization access level is insufficient.');
  t.equal((await call('projects_create', { key: await makeKey(db, a.user, ['project:read']), body: {} })).status, 403);
  t.equal((await call('projects_create', { body: {} })).status, 401);
});

t.test('projects_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('projects_retrieve', { key: a.key, params: { id: a.project.id } });
  t.match(res.body, {
    id: a.project.id,
    uuid: a.project.uuid,
    name: 'Default project',
    app_urls: [],
    anonymize_ips: false,
  });
  t.equal((await call('projects_retrieve', { key: a.key, params: { id: '@current' } })).body.id, a.project.id);
  const other = await call('projects_retrieve', { key: a.key, params: { id: b.project.id } });
  t.same(other.body, { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
  t.equal((await call('projects_retrieve', { key: a.key, params: { id: 'abc' } })).status, 404);
  t.equal((await call('projects_retrieve', { key: a.key, params: { id: 99999999 } })).status, 404);
  // Digits are read as PostHog's int() reads them: zero padding, however long, names the same project.
  const padded = String(a.project.id).padStart(12, '0');
  t.equal((await call('projects_retrieve', { key: a.key, params: { id: padded } })).body.id, a.project.id);
  const scopedElsewhere = await makeKey(db, a.user, ['project:read'], { scoped_teams: [999] });
  const refused = await call('projects_retrieve', { key: scopedElsewhere, params: { id: a.project.id } });
  t.equal(refused.body.detail, `API key does not have access to the requested project: ID ${a.project.id}.`);
  const otherOrgScope = await makeKey(db, a.user, ['project:read'], { scoped_organizations: [b.organization.id] });
  const refusedOrg = await call('projects_retrieve', { key: otherOrgScope, params: { id: a.project.id } });
  t.equal(
    refusedOrg.body.detail,
    `API key does not have access to the requested organization: ID ${a.organization.id}.`,
  );
  t.equal(
    (
      await call('projects_retrieve', {
        key: await makeKey(db, a.user, ['dashboard:read']),
        params: { id: a.project.id },
      })
    ).status,
    403,
  );
});

t.test('projects_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const member = await makeMember(db, a, 1);
  const res = await call('projects_partial_update', {
    key: member.key,
    params: { id: a.project.id },
    body: { name: 'Renamed', anonymize_ips: true, app_urls: ['https://example.com'], organization: b.organization.id },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    name: 'Renamed',
    anonymize_ips: true,
    app_urls: ['https://example.com'],
    organization: a.organization.id,
  });
  const bad = await call('projects_partial_update', {
    key: a.key,
    params: { id: a.project.id },
    body: { anonymize_ips: 'yes' },
  });
  t.match(bad.body, { attr: 'anonymize_ips', detail: 'Must be a valid boolean.' });
  const nested = await call('projects_partial_update', {
    key: a.key,
    params: { id: a.project.id },
    body: { test_account_filters: [1] },
  });
  t.match(nested.body, { attr: 'test_account_filters__0' });
  t.equal(
    (await call('projects_partial_update', { key: a.key, params: { id: b.project.id }, body: { name: 'x' } })).status,
    404,
  );
  t.equal(
    (
      await call('projects_partial_update', {
        key: await makeKey(db, a.user, ['project:read']),
        params: { id: a.project.id },
        body: {},
      })
    ).status,
    403,
  );
});

t.test('projects_destroy', async (t) => {
  const a = await makeTenant(db);
  const extra = await makeProject(db, a);
  const member = await makeMember(db, a, 1);
  t.equal((await call('projects_destroy', { key: member.key, params: { id: extra.id } })).status, 403);
  const b = await makeTenant(db);
  t.equal((await call('projects_destroy', { key: a.key, params: { id: b.project.id } })).status, 404);
  const res = await call('projects_destroy', { key: a.key, params: { id: extra.id } });
  t.equal(res.status, 204);
  t.equal((await call('projects_retrieve', { key: a.key, params: { id: extra.id } })).status, 404);
  t.equal((await call('projects_retrieve', { key: b.key, params: { id: b.project.id } })).status, 200);
});
