import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { FULL_FIELDS, invalid, denied, dashboardCalls } from '../helpers/dashboards.js';
import { makeKey, makeProject, makeTenant } from '../helpers/factories.js';

// Creating dashboards, from scratch and from a template.
const ctx = await buildTestApp(t);
const { call, db } = ctx;
const { dashboard, withTextTiles } = dashboardCalls(ctx);

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
