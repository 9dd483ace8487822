import { eq } from 'drizzle-orm';
import t from 'tap';
import { dashboards } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant, type Tenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const LIST_FIELDS = [
  'id',
  'name',
  'description',
  'pinned',
  'created_at',
  'created_by',
  'is_shared',
  'deleted',
  'creation_mode',
  'tags',
  'restriction_level',
  'effective_restriction_level',
  'effective_privilege_level',
  // PostHog's current DashboardBasic adds these.
  'last_accessed_at',
  'last_viewed_at',
  'user_access_level',
  'access_control_version',
  'last_refresh',
  'team_id',
].sort();
const FULL_FIELDS = [
  ...LIST_FIELDS,
  'use_template',
  'use_dashboard',
  'delete_insights',
  'filters',
  'tiles',
  'variables',
  'breakdown_colors',
  'data_color_theme_id',
  'persisted_filters',
  'persisted_variables',
].sort();

const denied = (scope: string) => ({
  type: 'authentication_error',
  code: 'permission_denied',
  detail: `API key missing required scope '${scope}'`,
  attr: null,
});
const notFound = (detail = 'Not found.') => ({ type: 'invalid_request', code: 'not_found', detail, attr: null });
const invalid = (attr: string | null, detail: string) => ({
  type: 'validation_error',
  code: 'invalid_input',
  detail,
  attr,
});
const NO_EDIT = "You don't have edit permissions for this dashboard.";

async function dashboard(
  tenant: Tenant,
  body: Record<string, unknown> = {},
  key = tenant.key,
  project = tenant.project.id,
) {
  const res = await call('dashboards_create', {
    key,
    params: { project_id: project },
    body: { name: 'Dash', ...body },
  });
  if (res.status !== 201) throw new Error(`could not create a dashboard: ${res.raw}`);
  return res.body;
}

async function patch(tenant: Tenant, id: number, body: Record<string, unknown>, key = tenant.key) {
  return call('dashboards_partial_update', { key, params: { project_id: tenant.project.id, id }, body });
}

async function withTextTiles(tenant: Tenant, id: number, ...bodies: string[]) {
  const tiles = bodies.map((body, i) => ({
    text: { body },
    layouts: { sm: { x: (i % 2) * 6, y: Math.floor(i / 2) * 5, w: 6, h: 5 } },
  }));
  const res = await patch(tenant, id, { tiles });
  if (res.status !== 200) throw new Error(`could not add tiles: ${res.raw}`);
  return res.body;
}

t.test('dashboards_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  await dashboard(a, { name: 'beta', tags: ['Sales'] });
  await dashboard(a, { name: 'alpha', tags: ['marketing', 'web'] });
  await dashboard(a, { name: 'zeta', pinned: true });
  const gone = await dashboard(a, { name: 'aaa deleted' });
  await patch(a, gone.id, { deleted: true });
  await dashboard(a, { name: 'other project' }, a.key, (await makeProject(db, a)).id);
  await dashboard(b, { name: 'other organization' });

  const res = await call('dashboards_list', { key: a.key, params });
  t.equal(res.status, 200);
  t.equal(res.body.count, 3, 'deleted dashboards and other projects are left out');
  t.same(
    res.body.results.map((d: any) => d.name),
    ['zeta', 'alpha', 'beta'],
    'pinned first, then by name',
  );
  t.same(Object.keys(res.body.results[0]).sort(), LIST_FIELDS, 'list items carry exactly the listed fields');
  t.match(res.body.results[1], {
    tags: ['marketing', 'web'],
    created_by: { id: a.user.id, email: a.user.email },
    restriction_level: 21,
    effective_restriction_level: 21,
    effective_privilege_level: 37,
    is_shared: false,
    creation_mode: 'default',
  });

  t.test('tags filter keeps dashboards with any of the tags', async (t) => {
    const one = await call('dashboards_list', { key: a.key, params, query: { tags: ' Marketing ' } });
    t.same(
      one.body.results.map((d: any) => d.name),
      ['alpha'],
    );
    const two = await call('dashboards_list', { key: a.key, params, query: { tags: ['sales', 'web'] } });
    t.same(
      two.body.results.map((d: any) => d.name),
      ['alpha', 'beta'],
    );
    const none = await call('dashboards_list', { key: a.key, params, query: { tags: 'nothing' } });
    t.equal(none.body.count, 0);
  });

  t.test('pagination', async (t) => {
    const page = await call('dashboards_list', { key: a.key, params, query: { limit: 1, offset: 1 } });
    t.equal(page.body.results[0].name, 'alpha');
    t.equal(page.body.next, `http://localhost/api/projects/${a.project.id}/dashboards/?limit=1&offset=2`);
    t.equal(page.body.previous, `http://localhost/api/projects/${a.project.id}/dashboards/?limit=1`);
    const past = await call('dashboards_list', { key: a.key, params, query: { limit: 1, offset: 99 } });
    t.same([past.body.count, past.body.results], [page.body.count, []], 'a page past the end still counts them all');
    const tagged = await call('dashboards_list', { key: a.key, params, query: { tags: 'web', offset: 99 } });
    const all = await call('dashboards_list', { key: a.key, params, query: { tags: 'web' } });
    t.same([tagged.body.count, tagged.body.results], [all.body.count, []], 'filtered too');
    const bad = await call('dashboards_list', { key: a.key, params, query: { limit: 'many' as never } });
    t.match(bad, { status: 400, body: { type: 'validation_error', attr: 'limit' } });
  });

  t.test('auth', async (t) => {
    t.equal((await call('dashboards_list', { params })).status, 401);
    const noScope = await call('dashboards_list', { key: await makeKey(db, a.user, ['organization:read']), params });
    t.same(noScope.body, denied('dashboard:read'));
    t.equal(
      (await call('dashboards_list', { key: await makeKey(db, a.user, ['dashboard:write']), params })).status,
      200,
    );
    const foreign = await call('dashboards_list', { key: b.key, params });
    t.equal(foreign.status, 403);
    t.equal(foreign.body.detail, "You don't have access to the project.");
    const current = await call('dashboards_list', { key: a.key, params: { project_id: '@current' } });
    t.equal(current.body.count, 3);
  });

  t.test('levels are computed for the caller', async (t) => {
    const member = await makeMember(db, a, 1);
    await dashboard(a, { name: 'locked', restriction_level: 37 });
    const res = await call('dashboards_list', { key: member.key, params, query: { limit: 10 } });
    const locked = res.body.results.find((d: any) => d.name === 'locked');
    t.match(locked, { restriction_level: 37, effective_restriction_level: 37, effective_privilege_level: 21 });
    const mine = await call('dashboards_list', { key: a.key, params, query: { limit: 10 } });
    t.equal(mine.body.results.find((d) => d.name === 'locked')!.effective_privilege_level, 37, 'the creator edits');
  });
});

t.test('dashboards_create', async (t) => {
  const a = await makeTenant(db);
  const params = { project_id: a.project.id };
  const res = await call('dashboards_create', {
    key: a.key,
    params,
    body: {
      name: 'Sales',
      description: 'Money',
      tags: [' B ', 'a', 'A', 'b', '  '],
      creation_mode: 'template',
      is_shared: true,
      id: 987654,
    },
  });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body).sort(), FULL_FIELDS);
  t.match(res.body, {
    name: 'Sales',
    description: 'Money',
    pinned: false,
    deleted: false,
    creation_mode: 'default',
    is_shared: false,
    tags: ['a', 'b'],
    use_template: '',
    use_dashboard: null,
    delete_insights: false,
    filters: {},
    tiles: [],
    restriction_level: 21,
    effective_restriction_level: 21,
    effective_privilege_level: 37,
    created_by: { id: a.user.id, uuid: a.user.uuid, email: a.user.email },
  });
  t.not(res.body.id, 987654, 'read-only fields are ignored');
  const restricted = await dashboard(a, { restriction_level: 37, filters: { date_from: '-7d' } });
  t.match(restricted, { restriction_level: 37, effective_restriction_level: 37, effective_privilege_level: 37 });
  t.same(restricted.filters, { date_from: '-7d' });

  t.test('use_template', async (t) => {
    const app = await dashboard(a, { name: null, use_template: 'DEFAULT_APP' });
    t.match(app, { name: 'Product analytics', creation_mode: 'template', use_template: 'DEFAULT_APP' });
    t.equal(app.tiles.length, 6, 'the template creates text tiles');
    t.match(app.tiles[0], {
      text: { body: /Daily active users/, created_by: { id: a.user.id } },
      insight: null,
      order: 0,
    });
    t.match(app.tiles[1].layouts, { sm: { x: 6, y: 0, w: 6, h: 5 } });
    const named = await dashboard(a, { name: 'Mine', use_template: 'Product analytics' });
    t.match(named, { name: 'Mine', creation_mode: 'template' });
    t.equal(named.tiles.length, 6, 'a template is found by its name too');
    const blank = await dashboard(a, { name: 'Empty', use_template: 'BLANK' });
    t.match(blank, { creation_mode: 'template', tiles: [] });
    const before = (await call('dashboards_list', { key: a.key, params })).body.count;
    const bad = await call('dashboards_create', { key: a.key, params, body: { name: 'x', use_template: 'NOPE' } });
    t.same(bad.body, invalid('use_template', 'Invalid template provided: NOPE'));
    t.equal((await call('dashboards_list', { key: a.key, params })).body.count, before, 'nothing was created');
  });

  t.test('use_dashboard duplicates with tiles', async (t) => {
    const source = await dashboard(a, { name: 'Source', filters: { date_from: '-30d' }, tags: ['x'] });
    const withTiles = await withTextTiles(a, source.id, 'one', 'two');
    const copy = await dashboard(a, { name: 'Copy', use_dashboard: source.id });
    t.match(copy, { name: 'Copy', creation_mode: 'duplicate', use_dashboard: source.id, tags: [] });
    t.same(copy.filters, { date_from: '-30d' });
    t.same(
      copy.tiles.map((x: any) => x.text.body),
      ['one', 'two'],
    );
    t.notSame(
      copy.tiles.map((x: any) => x.id),
      withTiles.tiles.map((x: any) => x.id),
      'tiles are copies',
    );
    const again = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: source.id } });
    t.equal(again.body.tiles.length, 2, 'the source keeps its tiles');
    const elsewhere = await dashboard(a, {}, a.key, (await makeProject(db, a)).id);
    for (const id of [elsewhere.id, 999999, 99999999999]) {
      const res = await call('dashboards_create', { key: a.key, params, body: { use_dashboard: id } });
      t.same(res.body, invalid('use_dashboard', 'Invalid value provided'), `use_dashboard ${id}`);
    }
    const both = await call('dashboards_create', {
      key: a.key,
      params,
      body: { use_dashboard: source.id, use_template: 'BLANK' },
    });
    t.same(both.body, invalid(null, '`use_dashboard` and `use_template` cannot be used together'));
  });

  t.test('validation', async (t) => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ name: 'x'.repeat(401) }, 'name', 'max_length'],
      [{ restriction_level: 30 }, 'restriction_level', 'invalid_choice'],
      [{ tags: 'x' }, 'tags', 'not_a_list'],
      [{ tags: [1] }, 'tags__0', 'invalid_input'],
      [{ pinned: 'yes' }, 'pinned', 'invalid_input'],
      [{ use_dashboard: 'one' }, 'use_dashboard', 'invalid_input'],
    ];
    for (const [body, attr, code] of cases) {
      const res = await call('dashboards_create', { key: a.key, params, body });
      t.match(res, { status: 400, body: { type: 'validation_error', attr, code } }, attr);
    }
    const filters = await call('dashboards_create', { key: a.key, params, body: { filters: [] } });
    t.same(filters.body, invalid('filters', 'Filters must be a dictionary'));
  });

  t.test('auth', async (t) => {
    t.equal((await call('dashboards_create', { params, body: {} })).status, 401);
    const reader = await makeKey(db, a.user, ['dashboard:read']);
    t.same((await call('dashboards_create', { key: reader, params, body: {} })).body, denied('dashboard:write'));
    const b = await makeTenant(db);
    t.equal((await call('dashboards_create', { key: b.key, params, body: {} })).status, 403);
  });
});

t.test('dashboards_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const d = await dashboard(a, { name: 'Mine', restriction_level: 37 });
  const res = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), FULL_FIELDS);
  t.same({ ...res.body, last_accessed_at: null }, d, 'the same as the create answer, but for the access time');
  t.equal(d.last_accessed_at, null, 'never retrieved yet');
  t.ok(Date.now() - Date.parse(res.body.last_accessed_at) < 60_000, 'a retrieve sets last_accessed_at');
  const again = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } });
  t.equal(again.body.last_accessed_at, res.body.last_accessed_at, 'not moved again within the minute');
  t.match(res.body, {
    team_id: a.project.id,
    last_viewed_at: null,
    user_access_level: 'manager',
    access_control_version: 'v1',
  });

  t.test('last_accessed_at is written at most once a minute, only by reads in the project', async (t) => {
    const e = await dashboard(a, { name: 'Throttled' });
    const read = (tenant: Tenant, projectId = tenant.project.id) =>
      call('dashboards_retrieve', { key: tenant.key, params: { project_id: projectId, id: e.id } });
    const stored = async () =>
      (await db.select().from(dashboards).where(eq(dashboards.id, e.id)))[0]!.last_accessed_at!.toISOString();
    const first = (await read(a)).body.last_accessed_at;
    t.equal(await stored(), first, 'the first read writes the time it answers');
    const stale = new Date(Date.now() - 61_000);
    await db.update(dashboards).set({ last_accessed_at: stale }).where(eq(dashboards.id, e.id));
    t.equal((await read(b, b.project.id)).status, 404, "another project's read does not reach it");
    t.equal(await stored(), stale.toISOString(), 'nor records itself on it');
    const later = (await read(a)).body.last_accessed_at;
    t.ok(Date.parse(later) > stale.getTime() + 60_000, 'a read after a minute writes it again');
    t.equal(await stored(), later, 'as answered');
    const recent = new Date(Date.now() - 30_000);
    await db.update(dashboards).set({ last_accessed_at: recent }).where(eq(dashboards.id, e.id));
    t.equal((await read(a)).body.last_accessed_at, recent.toISOString(), 'a read within the minute answers it as is');
    t.equal(await stored(), recent.toISOString(), 'and writes nothing');
  });

  t.test('privileges are computed per caller', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    const asMember = await call('dashboards_retrieve', { key: member.key, params: { ...params, id: d.id } });
    t.match(asMember.body, { restriction_level: 37, effective_restriction_level: 37, effective_privilege_level: 21 });
    const asAdmin = await call('dashboards_retrieve', { key: admin.key, params: { ...params, id: d.id } });
    t.equal(asAdmin.body.effective_privilege_level, 37);
    const own = await dashboard(a, { restriction_level: 37 }, member.key);
    const asCreator = await call('dashboards_retrieve', { key: member.key, params: { ...params, id: own.id } });
    t.equal(asCreator.body.effective_privilege_level, 37, 'the creator can always edit');
  });

  t.test('not found', async (t) => {
    const other = await dashboard(b);
    t.same((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: other.id } })).body, notFound());
    const sibling = await dashboard(a, {}, a.key, (await makeProject(db, a)).id);
    t.equal((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: sibling.id } })).status, 404);
    t.equal((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: 99999999999 } })).status, 404);
    const bad = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: 'abc' } });
    t.match(bad, { status: 400, body: { attr: 'id' } });
    t.equal((await call('dashboards_retrieve', { key: b.key, params: { ...params, id: d.id } })).status, 403);
  });

  t.test('auth', async (t) => {
    t.equal((await call('dashboards_retrieve', { params: { ...params, id: d.id } })).status, 401);
    const key = await makeKey(db, a.user, ['sharing_configuration:read']);
    t.same(
      (await call('dashboards_retrieve', { key, params: { ...params, id: d.id } })).body,
      denied('dashboard:read'),
    );
  });
});

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

t.test('dashboards_create_from_template_json_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const create = (body: unknown, key = a.key) =>
    call('dashboards_create_from_template_json_create', { key, params, body });
  const template = {
    template_name: 'Web analytics',
    dashboard_description: 'Traffic at a glance',
    dashboard_filters: { date_from: '-7d' },
    tags: ['Web', 'web ', 'Marketing'],
    tiles: [
      { type: 'TEXT', body: '# Visitors', layouts: { sm: { x: 0, y: 0, w: 12, h: 3 } }, color: 'green' },
      { type: 'TEXT', body: 'Notes' },
    ],
  };
  const res = await create({ template, creation_context: 'onboarding' });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), FULL_FIELDS);
  t.match(res.body, {
    name: 'Web analytics',
    description: 'Traffic at a glance',
    tags: ['marketing', 'web'],
    creation_mode: 'default',
    created_by: { id: a.user.id },
  });
  t.same(res.body.filters, { date_from: '-7d' });
  t.match(res.body.tiles, [
    { text: { body: '# Visitors' }, color: 'green', layouts: { sm: { w: 12 } } },
    { text: { body: 'Notes' } },
  ]);
  const got = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: res.body.id } });
  t.same({ ...got.body, last_accessed_at: null }, res.body, 'stored as answered');
  const minimal = await create({ template: { template_name: 'Just a name' } });
  t.match(minimal.body, { name: 'Just a name', description: '', tiles: [], tags: [] });

  t.test('validation', async (t) => {
    const before = (await call('dashboards_list', { key: a.key, params })).body.count;
    t.match((await create({})).body, { attr: 'template', code: 'required' });
    t.match((await create({ template: { tiles: [] } })).body, { attr: 'template__template_name', code: 'required' });
    t.match((await create({ template: { template_name: '' } })).body, {
      attr: 'template__template_name',
      code: 'blank',
    });
    t.match((await create({ template: { ...template, tiles: 'x' } })).body, {
      attr: 'template__tiles',
      code: 'not_a_list',
    });
    t.match((await create({ template: { ...template, tags: [true] } })).body, { attr: 'template__tags__0' });
    const insight = await create({ template: { ...template, tiles: [{ type: 'INSIGHT', name: 'DAU' }] } });
    t.match(insight.body, {
      type: 'validation_error',
      code: 'invalid_input',
      attr: 'template__tiles',
      detail: /INSIGHT/,
    });
    const noBody = await create({ template: { ...template, tiles: [{ type: 'TEXT' }] } });
    t.match(noBody.body, { attr: 'template__tiles__0__body', code: 'required' });
    t.match((await create({ template: { ...template, tiles: [{ body: 'x' }] } })).body, {
      attr: 'template__tiles__0__type',
    });
    t.equal((await call('dashboards_list', { key: a.key, params })).body.count, before, 'nothing was created');
  });

  t.test('auth', async (t) => {
    t.equal((await call('dashboards_create_from_template_json_create', { params, body: { template } })).status, 401);
    const reader = await makeKey(db, a.user, ['dashboard:read']);
    t.same((await create({ template }, reader)).body, denied('dashboard:write'));
    t.equal((await create({ template }, b.key)).status, 403);
  });
});

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
  t.equal((await open(`${token}.json`)).status, 200);
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
