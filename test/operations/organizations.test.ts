import t from 'tap';
import { json } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { ME, call, db } from '../helpers/organizations-app.js';

t.test('organizations_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_list', { key: a.key });
  t.equal(res.status, 200);
  t.equal(res.body.count, 1, 'only the caller’s organizations');
  t.match(res.body.results[0], { id: a.organization.id, membership_level: 15, member_count: 1 });
  t.same(res.body.results[0].projects, [
    { id: a.project.id, organization_id: a.organization.id, name: 'Default project' },
  ]);
  t.notOk(JSON.stringify(res.body).includes(b.organization.id), 'another organization is invisible');

  t.test('pagination envelope with absolute urls', async (t) => {
    for (let i = 0; i < 2; i++) await call('organizations_create', { key: a.key, body: { name: `More ${i}` } });
    const page = await call('organizations_list', { key: a.key, query: { limit: 1, offset: 1 } });
    t.equal(page.body.count, 3);
    t.equal(page.body.results.length, 1);
    t.equal(page.body.next, 'http://localhost/api/organizations/?limit=1&offset=2');
    t.equal(page.body.previous, 'http://localhost/api/organizations/?limit=1');
    const bad = await call('organizations_list', { key: a.key, query: { limit: 'abc' as never } });
    t.match(bad, { status: 400, body: { type: 'validation_error', attr: 'limit' } });
    // A limit over 1000 is clamped, not refused: the links carry the limit actually used.
    const clamped = json<'organizations_list'>(
      await call('organizations_list', { key: a.key, query: { limit: 5000, offset: 1 } }),
    );
    t.equal(clamped.previous, 'http://localhost/api/organizations/?limit=1000');
    t.equal(clamped.results.length, 2);
  });

  t.test('401 without a key, 401 with a bad key', async (t) => {
    const none = await call('organizations_list');
    t.same(none.body, {
      type: 'authentication_error',
      code: 'not_authenticated',
      detail: 'Authentication credentials were not provided.',
      attr: null,
    });
    t.equal(none.status, 401);
    const bad = await call('organizations_list', { key: 'phx_not_a_key' });
    t.equal(bad.status, 401);
    t.equal(bad.body.code, 'authentication_failed');
  });

  t.test('403 without the scope', async (t) => {
    const key = await makeKey(db, a.user, ['dashboard:read']);
    const res = await call('organizations_list', { key });
    t.same(res.body, {
      type: 'authentication_error',
      code: 'permission_denied',
      detail: "API key missing required scope 'organization:read'",
      attr: null,
    });
  });

  t.test('write implies read; scoped organizations filter', async (t) => {
    const writer = await makeKey(db, a.user, ['organization:write']);
    t.equal((await call('organizations_list', { key: writer })).status, 200);
    const scoped = await makeKey(db, a.user, ['organization:read'], { scoped_organizations: [a.organization.id] });
    const res = await call('organizations_list', { key: scoped });
    t.equal(res.body.count, 1);
    const teamScoped = await makeKey(db, a.user, ['organization:read'], { scoped_teams: [a.project.id] });
    const refused = await call('organizations_list', { key: teamScoped });
    t.equal(refused.status, 403);
    t.equal(refused.body.detail, 'API keys with scoped projects are only supported on project-based endpoints.');
  });
});

t.test('organizations_create', async (t) => {
  const a = await makeTenant(db);
  const res = await call('organizations_create', {
    key: a.key,
    body: { name: 'Acme Analytics!', slug: 'ignored', member_count: 99, is_member_join_email_enabled: false },
  });
  t.equal(res.status, 201);
  t.match(res.body, { name: 'Acme Analytics!', slug: 'acme-analytics', membership_level: 15, member_count: 1 });
  t.equal(res.body.is_member_join_email_enabled, false);
  t.equal(res.body.teams.length, 1, 'a first project comes with it');
  t.equal(res.body.teams[0].name, 'Default project');
  const again = await call('organizations_create', { key: a.key, body: { name: 'Acme Analytics' } });
  t.match(again.body.slug, /^acme-analytics-[a-z]{4}$/, 'a clashing slug gets a random suffix');
  const me = await call('users_retrieve', { key: a.key, params: ME });
  t.equal(me.body.organization.id, again.body.id, 'the new organization becomes current');

  t.test('validation', async (t) => {
    const missing = await call('organizations_create', { key: a.key, body: {} });
    t.same(missing.body, {
      type: 'validation_error',
      code: 'required',
      detail: 'This field is required.',
      attr: 'name',
    });
    const long = await call('organizations_create', { key: a.key, body: { name: 'x'.repeat(65) } });
    t.match(long.body, { code: 'max_length', attr: 'name' });
    const blank = await call('organizations_create', { key: a.key, body: { name: '' } });
    t.match(blank.body, { code: 'blank', attr: 'name' });
    const typed = await call('organizations_create', { key: a.key, body: { name: 'x', enforce_2fa: 'true' } });
    t.match(typed.body, { code: 'invalid_input', attr: 'enforce_2fa', detail: 'Must be a valid boolean.' });
    const badJson = await call('organizations_create', {
      key: a.key,
      payload: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    t.match(badJson, { status: 400, body: { type: 'invalid_request', code: 'parse_error' } });
    const huge = await call('organizations_create', {
      key: a.key,
      payload: JSON.stringify({ name: 'x', pad: 'y'.repeat(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    t.equal(huge.status, 413);
    const list = await call('organizations_list', { key: a.key });
    t.equal(list.body.count, 3, 'nothing was created by the refused requests');
  });

  t.test('403 without organization:write', async (t) => {
    const key = await makeKey(db, a.user, ['organization:read']);
    const res = await call('organizations_create', { key, body: { name: 'Nope' } });
    t.same(res.body, {
      type: 'authentication_error',
      code: 'permission_denied',
      detail: "API key missing required scope 'organization:write'",
      attr: null,
    });
  });
});

t.test('organizations_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_retrieve', { key: a.key, params: { id: a.organization.id } });
  t.equal(res.status, 200);
  t.equal(res.body.name, a.organization.name);
  const current = await call('organizations_retrieve', { key: a.key, params: { id: '@current' } });
  t.equal(current.body.id, a.organization.id);
  const other = await call('organizations_retrieve', { key: a.key, params: { id: b.organization.id } });
  t.same(other.body, { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
  t.equal((await call('organizations_retrieve', { key: a.key, params: { id: 'not-a-uuid' } })).status, 404);
  t.equal((await call('organizations_retrieve', { params: { id: a.organization.id } })).status, 401);
  const scoped = await makeKey(db, a.user, ['organization:read'], { scoped_organizations: [b.organization.id] });
  t.equal((await call('organizations_retrieve', { key: scoped, params: { id: a.organization.id } })).status, 404);
  const noScope = await makeKey(db, a.user, ['project:read']);
  t.equal((await call('organizations_retrieve', { key: noScope, params: { id: a.organization.id } })).status, 403);
});

t.test('organizations_destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const admin = await makeMember(db, a, 8);
  const denied = await call('organizations_destroy', { key: admin.key, params: { id: a.organization.id } });
  t.equal(denied.status, 403);
  t.equal((await call('organizations_destroy', { key: a.key, params: { id: b.organization.id } })).status, 404);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.equal((await call('organizations_destroy', { key: readOnly, params: { id: a.organization.id } })).status, 403);
  const res = await call('organizations_destroy', { key: a.key, params: { id: a.organization.id } });
  t.equal(res.status, 204);
  t.equal(res.raw, '');
  t.equal((await call('organizations_retrieve', { key: a.key, params: { id: a.organization.id } })).status, 404);
  const projects = await call('projects_retrieve', { key: admin.key, params: { id: a.project.id } });
  t.equal(projects.status, 404, 'its projects went with it, and the removed membership took effect at once');
  t.equal((await call('organizations_retrieve', { key: b.key, params: { id: b.organization.id } })).status, 200);
});
