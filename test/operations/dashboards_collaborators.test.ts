import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { invalid, NO_EDIT, denied, dashboardCalls, notFound } from '../helpers/dashboards.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';

// Who may see and edit a dashboard: collaborators and sharing.
const ctx = await buildTestApp(t);
const { call, db } = ctx;
const { dashboard, patch, withTextTiles } = dashboardCalls(ctx);

t.test('dashboard collaborators', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const member = await makeMember(db, a, 1);
  const admin = await makeMember(db, a, 8);
  const params = { project_id: a.project.id };
  const d = await dashboard(a, { name: 'Shared work' });
  const at = (dashboardId: number) => ({ ...params, dashboard_id: dashboardId });
  const add = (body: unknown, key = a.key, id = d.id) =>
    call('dashboards_collaborators_create', { key, params: at(id), body });
  const list = (key = a.key, id = d.id) => call('dashboards_collaborators_list', { key, params: at(id) });
  const remove = (uuid: string, key = a.key, id = d.id) =>
    call('dashboards_collaborators_destroy', { key, params: { ...at(id), user__uuid: uuid } });

  t.test('create', async (t) => {
    t.same(
      (await add({ user_uuid: member.user.uuid, level: 37 })).body,
      invalid(null, 'Cannot add collaborators to a dashboard on the lowest restriction level.'),
    );
    await patch(a, d.id, { restriction_level: 37 });
    t.equal((await add({ user_uuid: member.user.uuid, level: 37 }, member.key)).status, 403, 'only editors may add');
    t.match((await add({ user_uuid: member.user.uuid, level: 37 }, member.key)).body, { detail: NO_EDIT });
    t.same(
      (await add({ user_uuid: member.user.uuid, level: 21 })).body,
      invalid(null, 'Only edit access can be explicitly specified currently.'),
    );
    t.same(
      (await add({ user_uuid: '6f1c0d3e-0000-4000-8000-000000000000', level: 37 })).body,
      invalid(null, 'User does not exist.'),
    );
    t.same(
      (await add({ user_uuid: b.user.uuid, level: 37 })).body,
      invalid(null, 'Cannot add collaborators that have no access to the project.'),
    );
    const inherent = invalid(
      null,
      'Cannot add collaborators that already have inherent access (the dashboard owner or a project admins).',
    );
    t.same((await add({ user_uuid: admin.user.uuid, level: 37 })).body, inherent, 'a project admin');
    t.same((await add({ user_uuid: a.user.uuid, level: 37 })).body, inherent, 'the owner');
    const res = await add({ user_uuid: member.user.uuid, level: 37 });
    t.equal(res.status, 201);
    t.match(res.body, {
      dashboard_id: d.id,
      level: 37,
      user_uuid: member.user.uuid,
      user: { id: member.user.id, email: member.user.email },
    });
    t.match(res.body.id, /^[0-9a-f-]{36}$/);
    t.same(
      (await add({ user_uuid: member.user.uuid, level: 37 })).body,
      invalid(null, 'User already is a collaborator.'),
    );
    const creator = await makeMember(db, a, 1);
    const theirs = await dashboard(a, { restriction_level: 37 }, creator.key);
    t.same(
      (await add({ user_uuid: creator.user.uuid, level: 37 }, a.key, theirs.id)).body,
      inherent,
      'the dashboard creator',
    );
  });

  t.test('validation', async (t) => {
    t.match((await add({ level: 37 })).body, { attr: 'user_uuid', code: 'required' });
    t.match((await add({ user_uuid: 'nope', level: 37 })).body, { attr: 'user_uuid', detail: 'Must be a valid UUID.' });
    t.match((await add({ user_uuid: member.user.uuid })).body, { attr: 'level', code: 'required' });
    t.match((await add({ user_uuid: member.user.uuid, level: 99 })).body, { attr: 'level', code: 'invalid_choice' });
  });

  t.test('list', async (t) => {
    const res = await list(member.key);
    t.equal(res.status, 200);
    t.ok(Array.isArray(res.body), 'a plain array');
    t.same(
      res.body.map((c: any) => c.user.uuid),
      [member.user.uuid],
    );
    const open = await dashboard(a);
    t.same((await list(a.key, open.id)).body, []);
  });

  t.test('destroy', async (t) => {
    await patch(a, d.id, { restriction_level: 21 });
    t.equal((await list()).body.length, 1, 'collaborators survive lowering the restriction');
    t.same(
      (await remove(member.user.uuid)).body,
      invalid(null, 'Cannot remove collaborators from a dashboard on the lowest restriction level.'),
    );
    await patch(a, d.id, { restriction_level: 37 });
    const stranger = await makeMember(db, a, 1);
    t.match((await remove(member.user.uuid, stranger.key)).body, { code: 'permission_denied', detail: NO_EDIT });
    const res = await remove(member.user.uuid);
    t.equal(res.status, 204);
    t.equal(res.raw, '');
    t.same((await list()).body, []);
    t.same((await remove(member.user.uuid)).body, notFound());
    t.equal((await remove('not-a-uuid')).status, 404);
    const blocked = await patch(a, d.id, { name: 'no longer' }, member.key);
    t.equal(blocked.status, 403, 'the removed collaborator can no longer edit');
  });

  t.test('not found and auth', async (t) => {
    const other = await dashboard(b, { restriction_level: 37 });
    t.same((await list(a.key, other.id)).body, notFound('Dashboard not found.'));
    t.same(
      (await add({ user_uuid: member.user.uuid, level: 37 }, a.key, other.id)).body,
      notFound('Dashboard not found.'),
    );
    t.same((await remove(b.user.uuid, a.key, other.id)).body, notFound('Dashboard not found.'));
    const gone = await dashboard(a, { restriction_level: 37 });
    await patch(a, gone.id, { deleted: true });
    t.equal((await list(a.key, gone.id)).status, 404, 'a deleted dashboard');
    t.equal((await list(b.key)).status, 403);
    t.equal((await call('dashboards_collaborators_list', { params: at(d.id) })).status, 401);
    t.equal((await call('dashboards_collaborators_create', { params: at(d.id), body: {} })).status, 401);
    t.equal(
      (await call('dashboards_collaborators_destroy', { params: { ...at(d.id), user__uuid: member.user.uuid } }))
        .status,
      401,
    );
    const reader = await makeKey(db, a.user, ['dashboard:read']);
    const none = await makeKey(db, a.user, ['sharing_configuration:write']);
    t.same((await list(none)).body, denied('dashboard:read'));
    t.same((await add({ user_uuid: member.user.uuid, level: 37 }, reader)).body, denied('dashboard:write'));
    t.same((await remove(member.user.uuid, reader)).body, denied('dashboard:write'));
  });
});

t.test('dashboard sharing', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const d = await withTextTiles(a, (await dashboard(a, { name: 'Public' })).id, 'for everyone');
  const at = (id: number) => ({ ...params, dashboard_id: id });
  const get = (key = a.key, id = d.id) => call('dashboards_sharing_list', { key, params: at(id) });
  const save = (body: unknown, key = a.key, id = d.id) =>
    call('dashboards_sharing_partial_update', { key, params: at(id), body });
  const refresh = (key = a.key, id = d.id) => call('dashboards_sharing_refresh_create', { key, params: at(id) });
  const open = (token: string) => call('shared_dashboard_retrieve', { params: { access_token: token } });
  const isShared = async () =>
    (await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } })).body.is_shared;

  const first = await get();
  t.equal(first.status, 200);
  t.match(first.body, { created_at: null, enabled: false, access_token: /^[A-Za-z0-9_-]{30}$/ });
  t.not((await get()).body.access_token, first.body.access_token, 'unsaved: a fresh token on every read');

  const enabled = await save({ enabled: true });
  t.equal(enabled.status, 200);
  t.match(enabled.body, { enabled: true, created_at: /^\d{4}-/ });
  const token = enabled.body.access_token;
  t.same((await get()).body, enabled.body, 'saved: reads give the same configuration');
  t.equal(await isShared(), true);
  t.equal((await call('dashboards_list', { key: a.key, params })).body.results[0].is_shared, true);

  const shared = await open(token);
  t.equal(shared.status, 200, 'no key needed');
  t.match(shared.body, {
    id: d.id,
    name: 'Public',
    is_shared: true,
    effective_restriction_level: 37,
    effective_privilege_level: 21,
  });
  t.same(
    shared.body.tiles.map((tile: any) => tile.text.body),
    ['for everyone'],
  );
  t.equal((await call('shared_json_retrieve', { params: { access_token: token } })).status, 200);
  t.same((await open('not-a-token')).body, notFound());

  const disabled = await save({ enabled: false });
  t.match(disabled.body, { enabled: false, access_token: token });
  t.equal((await open(token)).status, 404, 'disabled sharing hides the dashboard');
  t.equal(await isShared(), false);
  t.equal((await save({})).body.access_token, token, 'an empty save changes nothing');

  await save({ enabled: true });
  const rotated = await refresh();
  t.equal(rotated.status, 200);
  t.match(rotated.body, { enabled: true });
  t.not(rotated.body.access_token, token);
  t.equal((await open(token)).status, 404, 'the old token is dead at once');
  t.equal((await open(rotated.body.access_token)).status, 200);
  t.equal((await get()).body.access_token, rotated.body.access_token);

  const fresh = await dashboard(a);
  const rotatedUnsaved = await refresh(a.key, fresh.id);
  t.match(rotatedUnsaved.body, { enabled: false, created_at: /^\d{4}-/ }, 'refresh saves an unsaved configuration');

  await patch(a, d.id, { deleted: true });
  t.equal((await open(rotated.body.access_token)).status, 404, 'a deleted dashboard is not served');
  t.equal((await get()).status, 404);
  await patch(a, d.id, { deleted: false });
  t.equal((await open(rotated.body.access_token)).status, 200, 'restoring brings the link back');

  t.test('edit rights', async (t) => {
    const member = await makeMember(db, a, 1);
    const locked = await dashboard(a, { restriction_level: 37 });
    t.equal((await get(member.key, locked.id)).status, 200, 'anyone in the project may read it');
    t.match((await save({ enabled: true }, member.key, locked.id)).body, {
      code: 'permission_denied',
      detail: NO_EDIT,
    });
    t.match((await refresh(member.key, locked.id)).body, { code: 'permission_denied', detail: NO_EDIT });
    t.equal((await save({ enabled: true }, member.key)).status, 200, 'at restriction 21 members may share');
  });

  t.test('validation, not found and auth', async (t) => {
    t.match((await save({ enabled: 'yes' })).body, { attr: 'enabled', code: 'invalid_input' });
    const other = await dashboard(b);
    t.same((await get(a.key, other.id)).body, notFound('Dashboard not found.'));
    t.same((await save({ enabled: true }, a.key, other.id)).body, notFound('Dashboard not found.'));
    t.same((await refresh(a.key, other.id)).body, notFound('Dashboard not found.'));
    t.equal((await get(b.key)).status, 403);
    t.equal((await call('dashboards_sharing_list', { params: at(d.id) })).status, 401);
    t.equal((await call('dashboards_sharing_partial_update', { params: at(d.id), body: {} })).status, 401);
    t.equal((await call('dashboards_sharing_refresh_create', { params: at(d.id) })).status, 401);
    const dashboardOnly = await makeKey(db, a.user, ['dashboard:write']);
    t.same((await get(dashboardOnly)).body, denied('sharing_configuration:read'));
    const reader = await makeKey(db, a.user, ['sharing_configuration:read']);
    t.same((await save({ enabled: true }, reader)).body, denied('sharing_configuration:write'));
    t.same((await refresh(reader)).body, denied('sharing_configuration:write'));
    const writer = await makeKey(db, a.user, ['sharing_configuration:write']);
    t.equal((await get(writer)).status, 200, 'write implies read');
  });
});
