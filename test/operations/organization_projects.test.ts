import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const NOT_FOUND = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };
const org = (tenant: { organization: { id: string } }) => ({ organization_id: tenant.organization.id });

t.test('organizations_projects_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const second = await makeProject(db, a);
  const res = await call('organizations_projects_list', { key: a.key, params: org(a) });
  t.equal(res.status, 200);
  t.equal(res.body.count, 2);
  t.same(
    res.body.results.map((p: { id: number }) => p.id),
    [a.project.id, second.id],
  );
  t.match(res.body.results[0], { organization: a.organization.id, api_token: /^phc_/ });
  const current = await call('organizations_projects_list', { key: a.key, params: { organization_id: '@current' } });
  t.equal(current.body.count, 2, '@current names the caller’s organization');
  const page = await call('organizations_projects_list', {
    key: a.key,
    params: org(a),
    query: { limit: 1, offset: 1 },
  });
  t.same(
    page.body.results.map((p: { id: number }) => p.id),
    [second.id],
  );
  t.match(page.body.previous, /limit=1/);

  const foreign = await call('organizations_projects_list', { key: a.key, params: org(b) });
  t.equal(foreign.status, 403, 'another organization: 403, as for its other sub-resources');
  t.notOk(foreign.raw.includes(b.project.api_token));
  t.equal((await call('organizations_projects_list', { key: a.key, params: { organization_id: 'nope' } })).status, 404);
  t.equal((await call('organizations_projects_list', { params: org(a) })).status, 401);
  t.equal(
    (await call('organizations_projects_list', { key: await makeKey(db, a.user, ['dashboard:read']), params: org(a) }))
      .status,
    403,
  );
  const orgScoped = await makeKey(db, a.user, ['project:read'], { scoped_organizations: [b.organization.id] });
  t.equal((await call('organizations_projects_list', { key: orgScoped, params: org(a) })).status, 403);
  const teamScoped = await makeKey(db, a.user, ['project:read'], { scoped_teams: [a.project.id] });
  const refused = await call('organizations_projects_list', { key: teamScoped, params: org(a) });
  t.equal(refused.body.detail, 'API keys with scoped projects are only supported on project-based endpoints.');
  const bad = await call('organizations_projects_list', { key: a.key, params: org(a), query: { limit: 'x' as never } });
  t.match(bad.body, { type: 'validation_error', attr: 'limit' });
});

t.test('organizations_projects_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_projects_create', {
    key: a.key,
    params: org(a),
    body: {
      name: 'Web',
      timezone: 'Europe/Berlin',
      heatmaps_opt_in: true,
      organization: b.organization.id,
      api_token: 'phc_mine',
    },
  });
  t.equal(res.status, 201);
  t.match(res.body, {
    name: 'Web',
    timezone: 'Europe/Berlin',
    organization: a.organization.id,
    heatmaps_opt_in: true,
    autocapture_opt_out: null,
  });
  t.not(res.body.api_token, 'phc_mine', 'read-only fields are ignored');
  t.equal(
    (await call('projects_retrieve', { key: a.key, params: { id: res.body.id } })).status,
    200,
    'reachable at once',
  );

  const bad = await call('organizations_projects_create', { key: a.key, params: org(a), body: { name: '' } });
  t.match(bad.body, { type: 'validation_error', attr: 'name' });
  const tz = await call('organizations_projects_create', {
    key: a.key,
    params: org(a),
    body: { timezone: 'Mars/Olympus' },
  });
  t.match(tz.body, { code: 'invalid_choice', attr: 'timezone' });
  const typed = await call('organizations_projects_create', {
    key: a.key,
    params: org(a),
    body: { heatmaps_opt_in: 'yes' },
  });
  t.match(typed.body, { attr: 'heatmaps_opt_in' });
  const member = await makeMember(db, a, 1);
  const low = await call('organizations_projects_create', { key: member.key, params: org(a), body: { name: 'Nope' } });
  t.match(low, { status: 403, body: { detail: 'Your organization access level is insufficient.' } });
  const foreign = await call('organizations_projects_create', {
    key: a.key,
    params: org(b),
    body: { name: 'Intruder' },
  });
  t.equal(foreign.status, 403, 'a project is never created in another organization');
  const bList = await call('organizations_projects_list', { key: b.key, params: org(b) });
  t.equal(bList.body.count, 1, 'which keeps its one project');
  t.equal(
    (
      await call('organizations_projects_create', {
        key: await makeKey(db, a.user, ['project:read']),
        params: org(a),
        body: {},
      })
    ).status,
    403,
  );
  t.equal((await call('organizations_projects_create', { params: org(a), body: {} })).status, 401);
});

t.test('organizations_projects_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_projects_retrieve', { key: a.key, params: { ...org(a), id: a.project.id } });
  t.equal(res.status, 200);
  t.match(res.body, {
    id: a.project.id,
    uuid: a.project.uuid,
    effective_membership_level: 15,
    autocapture_opt_out: null,
    heatmaps_opt_in: null,
  });
  const cur = await call('organizations_projects_retrieve', { key: a.key, params: { ...org(a), id: '@current' } });
  t.equal(json<'organizations_projects_retrieve'>(cur).id, a.project.id, "@current is the caller's current project");
  const elsewhere = await call('organizations_projects_retrieve', {
    key: a.key,
    params: { ...org(a), id: b.project.id },
  });
  t.same(elsewhere.body, NOT_FOUND, "another organization's project id on my organization's path is a 404");
  t.equal(
    (await call('organizations_projects_retrieve', { key: a.key, params: { ...org(b), id: b.project.id } })).status,
    403,
  );
  for (const id of ['abc', '99999999', '99999999999999']) {
    t.equal((await call('organizations_projects_retrieve', { key: a.key, params: { ...org(a), id } })).status, 404, id);
  }
  t.equal((await call('organizations_projects_retrieve', { params: { ...org(a), id: a.project.id } })).status, 401);
  t.equal(
    (
      await call('organizations_projects_retrieve', {
        key: await makeKey(db, a.user, ['dashboard:read']),
        params: { ...org(a), id: a.project.id },
      })
    ).status,
    403,
  );
});

t.test('organizations_projects_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const member = await makeMember(db, a, 1);
  const res = await call('organizations_projects_partial_update', {
    key: member.key,
    params: { ...org(a), id: a.project.id },
    body: { name: 'Renamed', autocapture_opt_out: true, id: 5, organization: b.organization.id },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    id: a.project.id,
    name: 'Renamed',
    autocapture_opt_out: true,
    organization: a.organization.id,
    effective_membership_level: 1,
  });
  const bad = await call('organizations_projects_partial_update', {
    key: a.key,
    params: { ...org(a), id: a.project.id },
    body: { autocapture_opt_out: 'no' },
  });
  t.match(bad.body, { type: 'validation_error', attr: 'autocapture_opt_out', detail: 'Must be a valid boolean.' });
  const cross = await call('organizations_projects_partial_update', {
    key: a.key,
    params: { ...org(a), id: b.project.id },
    body: { name: 'Hijacked' },
  });
  t.same(cross.body, NOT_FOUND);
  const untouched = await call('projects_retrieve', { key: b.key, params: { id: b.project.id } });
  t.equal(untouched.body.name, 'Default project', "another organization's project is unchanged");
  t.equal(
    (
      await call('organizations_projects_partial_update', {
        key: await makeKey(db, a.user, ['project:read']),
        params: { ...org(a), id: a.project.id },
        body: {},
      })
    ).status,
    403,
  );
  t.equal(
    (await call('organizations_projects_partial_update', { params: { ...org(a), id: a.project.id }, body: {} })).status,
    401,
  );
});

t.test('organizations_projects_destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const extra = await makeProject(db, a);
  const member = await makeMember(db, a, 1);
  const low = await call('organizations_projects_destroy', { key: member.key, params: { ...org(a), id: extra.id } });
  t.equal(low.status, 403);
  const cross = await call('organizations_projects_destroy', { key: a.key, params: { ...org(a), id: b.project.id } });
  t.same(cross.body, NOT_FOUND);
  t.equal(
    (await call('projects_retrieve', { key: b.key, params: { id: b.project.id } })).status,
    200,
    "another organization's project survives",
  );
  t.equal(
    (
      await call('organizations_projects_destroy', {
        key: await makeKey(db, a.user, ['project:read']),
        params: { ...org(a), id: extra.id },
      })
    ).status,
    403,
  );
  t.equal((await call('organizations_projects_destroy', { params: { ...org(a), id: extra.id } })).status, 401);
  const res = await call('organizations_projects_destroy', { key: a.key, params: { ...org(a), id: extra.id } });
  t.equal(res.status, 204);
  t.equal(
    (await call('organizations_projects_retrieve', { key: a.key, params: { ...org(a), id: extra.id } })).status,
    404,
  );
  t.equal(
    (await call('projects_retrieve', { key: a.key, params: { id: extra.id } })).status,
    404,
    'gone from every path',
  );
});
