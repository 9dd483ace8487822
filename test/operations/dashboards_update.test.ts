import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { FULL_FIELDS, invalid, NO_EDIT, denied, dashboardCalls, notFound } from '../helpers/dashboards.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';

// Changing, deleting and rearranging dashboards.
const ctx = await buildTestApp(t);
const { call, db } = ctx;
const { dashboard, patch, withTextTiles } = dashboardCalls(ctx);

t.test('dashboards_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const d = await dashboard(a, { name: 'Before', tags: ['old'] });
  const res = await patch(a, d.id, {
    name: 'After',
    description: 'New words',
    pinned: true,
    tags: ['New', 'new ', 'Other'],
    filters: { date_from: '-14d' },
    use_template: 'DEFAULT_APP',
    creation_mode: 'duplicate',
  });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), FULL_FIELDS);
  t.match(res.body, {
    name: 'After',
    description: 'New words',
    pinned: true,
    tags: ['new', 'other'],
    creation_mode: 'default',
  });
  t.same(res.body.filters, { date_from: '-14d' });
  t.same(res.body.tiles, [], 'use_template is ignored on update');
  const listed = await call('dashboards_list', { key: a.key, params, query: { tags: 'old' } });
  t.equal(listed.body.count, 0, 'replaced tags no longer match');

  t.test('soft delete and restore', async (t) => {
    const x = await dashboard(a, { name: 'Doomed' });
    await withTextTiles(a, x.id, 'kept');
    const del = await patch(a, x.id, { deleted: true });
    t.match(del, { status: 200, body: { deleted: true } });
    t.same((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: x.id } })).body, notFound());
    const names = (await call('dashboards_list', { key: a.key, params })).body.results.map((r: any) => r.name);
    t.notOk(names.includes('Doomed'), 'hidden from the list');
    t.equal((await patch(a, x.id, { name: 'Still gone' })).status, 404, 'only a restore reaches it');
    t.equal((await patch(a, x.id, { deleted: true })).status, 404);
    const back = await patch(a, x.id, { deleted: false });
    t.match(back, { status: 200, body: { deleted: false, name: 'Doomed' } });
    t.same(
      back.body.tiles.map((tile: any) => tile.text.body),
      ['kept'],
      'restored with its tiles',
    );
    t.equal((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: x.id } })).status, 200);
  });

  t.test('restriction and edit rights', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    const x = await dashboard(a, { name: 'Owned' });
    const refused = await patch(a, x.id, { restriction_level: 37 }, member.key);
    t.same(refused.body, {
      type: 'authentication_error',
      code: 'permission_denied',
      detail:
        "Only the dashboard owner and project admins have the restriction rights required to change the dashboard's " +
        'restriction level.',
      attr: null,
    });
    t.equal((await patch(a, x.id, { name: 'member may edit at 21' }, member.key)).status, 200);
    t.match((await patch(a, x.id, { restriction_level: 37 }, admin.key)).body, { restriction_level: 37 });
    const blocked = await patch(a, x.id, { name: 'nope' }, member.key);
    t.match(blocked, { status: 403, body: { code: 'permission_denied', detail: NO_EDIT } });
    const own = await dashboard(a, {}, member.key);
    t.match((await patch(a, own.id, { restriction_level: 37 }, member.key)).body, { restriction_level: 37 });
    t.match((await patch(a, own.id, { name: 'admin edits anything' }, admin.key)).body, {
      name: 'admin edits anything',
    });
    const added = await call('dashboards_collaborators_create', {
      key: a.key,
      params: { ...params, dashboard_id: x.id },
      body: { user_uuid: member.user.uuid, level: 37 },
    });
    t.equal(added.status, 201);
    const edited = await patch(a, x.id, { name: 'collaborator edit' }, member.key);
    t.match(edited.body, { name: 'collaborator edit', effective_privilege_level: 37 });
  });

  t.test('tiles', async (t) => {
    const x = await dashboard(a, { name: 'Tiles' });
    const added = await patch(a, x.id, {
      tiles: [
        { text: { body: 'Second' }, layouts: { sm: { x: 0, y: 5, w: 12, h: 4 } }, color: 'blue' },
        { text: { body: 'First' }, layouts: { sm: { x: 0, y: 0, w: 6, h: 5 } } },
      ],
    });
    t.equal(added.status, 200);
    const [first, second] = added.body.tiles;
    t.match(first, {
      text: { body: 'First', created_by: { id: a.user.id }, last_modified_by: null },
      color: null,
      order: 0,
    });
    t.match(second, { text: { body: 'Second' }, color: 'blue', layouts: { sm: { w: 12 } }, order: 1 });
    const member = await makeMember(db, a, 1);
    const changed = await patch(
      a,
      x.id,
      { tiles: [{ id: second.id, text: { body: 'Edited' }, color: 'green' }] },
      member.key,
    );
    t.match(changed.body.tiles[1], {
      id: second.id,
      text: { body: 'Edited', last_modified_by: { id: member.user.id } },
      color: 'green',
    });
    t.same(changed.body.tiles[1].layouts, second.layouts, 'unsent tile fields are kept');
    const removed = await patch(a, x.id, { tiles: [{ id: first.id, deleted: true }] });
    t.same(
      removed.body.tiles.map((tile: any) => tile.id),
      [second.id],
      'a deleted tile is gone',
    );
    const revive = await patch(a, x.id, { name: 'untouched', tiles: [{ id: first.id, deleted: false }] });
    t.match(revive.body, { attr: 'tiles__0__id', type: 'validation_error' });
    const other = await dashboard(a, { name: 'Other' });
    const foreignTile = (await withTextTiles(a, other.id, 'not yours')).tiles[0].id;
    t.match((await patch(a, x.id, { tiles: [{ id: foreignTile, color: 'red' }] })).body, { attr: 'tiles__0__id' });
    t.match((await patch(a, x.id, { tiles: [{ layouts: {} }] })).body, { attr: 'tiles__0__text', code: 'required' });
    const long = await patch(a, x.id, { tiles: [{ text: { body: 'x'.repeat(4001) } }] });
    t.match(long.body, { attr: 'tiles__0__text__body', code: 'max_length' });
    const after = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: x.id } });
    t.equal(after.body.name, 'Tiles', 'a refused change writes nothing');
    t.equal(after.body.tiles.length, 1);
  });

  t.test('validation and auth', async (t) => {
    t.match((await patch(a, d.id, { name: 'x'.repeat(401) })).body, { attr: 'name', code: 'max_length' });
    t.match((await patch(a, d.id, { restriction_level: 1 })).body, {
      attr: 'restriction_level',
      code: 'invalid_choice',
    });
    t.match((await patch(a, d.id, { deleted: 'true' })).body, { attr: 'deleted', code: 'invalid_input' });
    t.same((await patch(a, d.id, { filters: 'x' })).body, invalid('filters', 'Filters must be a dictionary'));
    t.match((await patch(a, d.id, { tiles: {} })).body, { attr: 'tiles', code: 'not_a_list' });
    t.equal((await call('dashboards_partial_update', { params: { ...params, id: d.id }, body: {} })).status, 401);
    const reader = await makeKey(db, a.user, ['dashboard:read']);
    t.same((await patch(a, d.id, {}, reader)).body, denied('dashboard:write'));
    const other = await dashboard(b);
    t.same((await patch(a, other.id, { name: 'hijack' })).body, notFound());
    t.same((await patch(a, other.id, { deleted: false })).body, notFound());
    t.equal(
      (await call('dashboards_partial_update', { key: b.key, params: { ...params, id: d.id }, body: {} })).status,
      403,
    );
  });
});

t.test('dashboards_destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const d = await dashboard(a);
  const res = await call('dashboards_destroy', { key: a.key, params: { ...params, id: d.id } });
  t.equal(res.status, 405);
  t.equal(res.raw, '', 'the body is empty');
  t.equal(
    (await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } })).status,
    200,
    'still there',
  );
  const unknown = await call('dashboards_destroy', { key: a.key, params: { ...params, id: 999999 } });
  t.equal(unknown.status, 405, 'refused before any lookup, as PostHog does');
  t.equal((await call('dashboards_destroy', { params: { ...params, id: d.id } })).status, 401);
  const reader = await makeKey(db, a.user, ['dashboard:read']);
  t.same(
    (await call('dashboards_destroy', { key: reader, params: { ...params, id: d.id } })).body,
    denied('dashboard:write'),
  );
  t.equal((await call('dashboards_destroy', { key: b.key, params: { ...params, id: d.id } })).status, 403);
  const foreign = await call('dashboards_destroy', { key: a.key, params: { project_id: b.project.id, id: d.id } });
  t.equal(foreign.status, 403);
});

t.test('dashboards_move_tile_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const from = await withTextTiles(a, (await dashboard(a, { name: 'From' })).id, 'stays', 'moves');
  const to = await dashboard(a, { name: 'To' });
  const moving = from.tiles.find((tile: any) => tile.text.body === 'moves')!;
  const move = (body: unknown, key = a.key, id = from.id) =>
    call('dashboards_move_tile_partial_update', { key, params: { ...params, id }, body });

  const res = await move({ tile: { id: moving.id }, toDashboard: to.id });
  t.equal(res.status, 200);
  t.equal(res.body.id, from.id, 'the answer is the source dashboard');
  t.same(
    res.body.tiles.map((tile: any) => tile.text.body),
    ['stays'],
  );
  const target = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: to.id } });
  t.same(
    target.body.tiles.map((tile: any) => [tile.id, tile.text.body]),
    [[moving.id, 'moves']],
  );

  t.test('not found', async (t) => {
    t.same(
      (await move({ tile: { id: moving.id }, toDashboard: to.id })).body,
      notFound(),
      'the tile is no longer here',
    );
    const stays = from.tiles.find((tile: any) => tile.text.body === 'stays')!.id;
    const sibling = await dashboard(a, {}, a.key, (await makeProject(db, a)).id);
    t.same((await move({ tile: { id: stays }, toDashboard: sibling.id })).body, notFound(), 'another project');
    t.equal(
      (await move({ tile: { id: stays }, toDashboard: (await dashboard(b)).id })).status,
      404,
      'another organization',
    );
    t.equal((await move({ tile: { id: stays }, toDashboard: 99999999999 })).status, 404);
    const gone = await dashboard(a);
    await patch(a, gone.id, { deleted: true });
    t.equal((await move({ tile: { id: stays }, toDashboard: gone.id })).status, 404, 'a deleted dashboard');
    t.equal((await move({ tile: { id: stays }, toDashboard: to.id }, b.key)).status, 403);
    t.equal((await move({ tile: { id: 1 }, toDashboard: to.id }, a.key, (await dashboard(b)).id)).status, 404);
  });

  t.test('edit rights on both dashboards', async (t) => {
    const member = await makeMember(db, a, 1);
    const open = await withTextTiles(a, (await dashboard(a, { name: 'Open' })).id, 'tile');
    const locked = await dashboard(a, { name: 'Locked', restriction_level: 37 });
    const toLocked = await move({ tile: { id: open.tiles[0].id }, toDashboard: locked.id }, member.key, open.id);
    t.match(toLocked.body, {
      code: 'permission_denied',
      detail: "You don't have edit permissions for the destination dashboard.",
    });
    const lockedSource = await withTextTiles(a, locked.id, 'locked tile');
    const fromLocked = await move(
      { tile: { id: lockedSource.tiles[0].id }, toDashboard: open.id },
      member.key,
      locked.id,
    );
    t.match(fromLocked.body, { code: 'permission_denied', detail: NO_EDIT });
  });

  t.test('validation and auth', async (t) => {
    t.match((await move({ tile: { id: moving.id } })).body, { attr: 'toDashboard', code: 'required' });
    t.match((await move({ tile: { id: 'x' }, toDashboard: to.id })).body, { attr: 'tile__id', code: 'invalid_input' });
    t.match((await move({ toDashboard: to.id })).body, { attr: 'tile', code: 'required' });
    t.equal(
      (await call('dashboards_move_tile_partial_update', { params: { ...params, id: from.id }, body: {} })).status,
      401,
    );
    const reader = await makeKey(db, a.user, ['dashboard:read']);
    t.same((await move({ tile: { id: 1 }, toDashboard: to.id }, reader)).body, denied('dashboard:write'));
  });
});
