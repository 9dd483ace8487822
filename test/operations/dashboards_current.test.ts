import t from 'tap';
import { sql } from 'drizzle-orm';
import { spec } from '../../src/http/spec.js';
import { buildTestApp } from '../helpers/app.js';
import { makeMember, makeProject, makeTenant, type Tenant } from '../helpers/factories.js';

// The fields and operations PostHog's current dashboards have beyond the document: PUT, the writable
// extras, unlisted dashboards and the streamed retrieve.
const ctx = await buildTestApp(t);
const { call, db } = ctx;

const invalid = (attr: string | null, detail: string) => ({
  type: 'validation_error',
  code: 'invalid_input',
  detail,
  attr,
});
const notFound = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };

async function dashboard(tenant: Tenant, body: Record<string, unknown> = {}, key = tenant.key) {
  const res = await call('dashboards_create', {
    key,
    params: { project_id: tenant.project.id },
    body: { name: 'Dash', ...body },
  });
  if (res.status !== 201) throw new Error(`could not create a dashboard: ${res.raw}`);
  return res.body;
}

const retrieve = (tenant: Tenant, id: number, key = tenant.key) =>
  call('dashboards_retrieve', { key, params: { project_id: tenant.project.id, id } });

t.test('new fields: defaults, writes and duplication', async (t) => {
  const a = await makeTenant(db);
  const d = await dashboard(a);
  t.match(d, {
    team_id: a.project.id,
    last_accessed_at: null,
    last_viewed_at: null,
    last_refresh: null,
    user_access_level: 'manager',
    access_control_version: 'v2',
    variables: {},
    breakdown_colors: [],
    data_color_theme_id: null,
    persisted_filters: null,
    persisted_variables: null,
  });
  t.notOk('_create_in_folder' in d, 'write-only fields are never answered');

  const refreshed = '2026-01-02T03:04:05.000Z';
  const body = {
    last_refresh: refreshed,
    breakdown_colors: [{ breakdownValue: 'Chrome', colorToken: 'preset-1' }],
    data_color_theme_id: 7,
    variables: { v1: { code_name: 'country', value: 'NL' } },
    filters: { date_from: '-30d' },
    _create_in_folder: 'Unfiled/Dashboards',
  };
  const res = await call('dashboards_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: d.id },
    body,
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    last_refresh: refreshed,
    breakdown_colors: body.breakdown_colors,
    data_color_theme_id: 7,
    variables: body.variables,
    persisted_variables: body.variables,
    persisted_filters: { date_from: '-30d' },
  });
  const empty = await call('dashboards_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: d.id },
    body: { variables: {} },
  });
  t.same(empty.body.variables, body.variables, 'empty variables leave the stored ones, as in PostHog');

  const copy = await dashboard(a, { use_dashboard: d.id });
  t.match(copy, {
    creation_mode: 'duplicate',
    variables: body.variables,
    breakdown_colors: body.breakdown_colors,
    data_color_theme_id: 7,
  });

  const created = await dashboard(a, { last_refresh: refreshed, data_color_theme_id: 3, variables: { ignored: true } });
  t.match(
    created,
    { last_refresh: refreshed, data_color_theme_id: 3, variables: {} },
    'variables are set on update only',
  );

  t.test('bad values', async (t) => {
    const params = { project_id: a.project.id, id: d.id };
    const bad = async (b: Record<string, unknown>) =>
      (await call('dashboards_partial_update', { key: a.key, params, body: b })).body;
    t.same(await bad({ variables: [1] }), invalid('variables', 'Variables must be a dictionary'));
    t.same(await bad({ data_color_theme_id: 'blue' }), invalid('data_color_theme_id', 'A valid integer is required.'));
    t.match(await bad({ data_color_theme_id: 2 ** 31 }), { type: 'validation_error', attr: 'data_color_theme_id' });
    t.match(await bad({ last_refresh: 'yesterday' }), { type: 'validation_error', attr: 'last_refresh' });
    t.match((await retrieve(a, d.id)).body, { data_color_theme_id: 7, last_refresh: refreshed }, 'nothing changed');
  });

  t.test('access levels per caller', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    const locked = await dashboard(a, { restriction_level: 37 });
    t.match((await retrieve(a, d.id, member.key)).body, { user_access_level: 'editor', access_control_version: 'v2' });
    t.match((await retrieve(a, locked.id, member.key)).body, {
      user_access_level: 'viewer',
      access_control_version: 'v1',
    });
    t.match((await retrieve(a, locked.id, admin.key)).body, { user_access_level: 'manager' });
  });
});

t.test('dashboards_update (PUT)', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const d = await dashboard(a, { description: 'kept', tags: ['x'] });
  const params = { project_id: a.project.id, id: d.id };
  const put = (body: unknown, key = a.key, p: Record<string, string | number> = params) =>
    call('dashboards_update', { key, params: p, body });

  const res = await put({ name: 'Renamed', pinned: true, tiles: [{ text: { body: 'hello' } }] });
  t.equal(res.status, 200);
  t.match(
    res.body,
    { name: 'Renamed', pinned: true, description: 'kept', tags: ['x'] },
    'fields left out keep their values',
  );
  t.same(
    res.body.tiles.map((tile: any) => tile.text.body),
    ['hello'],
  );

  await put({ deleted: true });
  t.equal((await retrieve(a, d.id)).status, 404, 'PUT deletes (soft)');
  t.equal((await put({ deleted: false })).status, 200, 'and restores');

  t.same((await put({ name: 'x'.repeat(401) })).body, {
    type: 'validation_error',
    code: 'max_length',
    detail: 'Ensure this field has no more than 400 characters.',
    attr: 'name',
  });
  t.equal((await put({ name: 'n' }, '')).status, 401);
  const member = await makeMember(db, a, 1, ['dashboard:read']);
  t.equal((await put({ name: 'n' }, member.key)).status, 403, 'needs dashboard:write');
  const locked = await dashboard(a, { restriction_level: 37 });
  const writer = await makeMember(db, a, 1);
  t.equal((await put({ name: 'n' }, writer.key, { ...params, id: locked.id })).status, 403, 'needs edit rights');

  t.equal((await put({ name: 'theirs' }, b.key)).status, 403, "another organization's project");
  const theirs = await dashboard(b);
  const cross = await put({ name: 'stolen' }, a.key, { ...params, id: theirs.id });
  t.same(cross.body, notFound, "another tenant's dashboard on my path");
  t.equal((await retrieve(b, theirs.id)).body.name, 'Dash', 'unchanged');
});

t.test('dashboards_create_unlisted_dashboard_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const create = (body: unknown, key = a.key, p = params) =>
    call('dashboards_create_unlisted_dashboard_create', { key, params: p, body });

  const res = await create({ tag: 'llm-analytics' });
  t.equal(res.status, 201);
  t.match(res.body, {
    name: 'LLM Analytics Default',
    description: 'Overview of your LLM usage, costs, and performance',
    creation_mode: 'unlisted',
    tags: ['llm-analytics'],
    filters: { date_from: '-7d', __template_version: 1 },
    created_by: { id: a.user.id },
  });
  t.equal(res.body.tiles.length, 9);
  t.match(res.body.tiles[0], { text: { body: /^## Traces/ }, layouts: { sm: { x: 0, y: 0, w: 4 } } });

  t.same((await create({ tag: 'llm-analytics' })).body, {
    type: 'invalid_request',
    code: 'conflict',
    detail: "Unlisted dashboard with tag 'llm-analytics' already exists",
    attr: null,
  });
  t.equal((await create({ tag: 'llm-analytics' })).status, 409, 'one per tag per project');

  const list = await call('dashboards_list', { key: a.key, params });
  t.equal(list.body.count, 0, 'unlisted dashboards are left out of the list');
  const unlisted = await call('dashboards_list', { key: a.key, params: params, query: { creation_mode: 'unlisted' } });
  t.same(
    unlisted.body.results.map((x: any) => x.id),
    [res.body.id],
    'unless asked for',
  );
  t.equal((await retrieve(a, res.body.id)).status, 200, 'a direct retrieve works');

  await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: res.body.id },
    body: { deleted: true },
  });
  t.equal((await create({ tag: 'llm-analytics' })).status, 201, 'a deleted one no longer counts');
  t.equal(
    (await create({ tag: 'llm-analytics' }, a.key, { project_id: (await makeProject(db, a)).id })).status,
    201,
    'per project',
  );

  t.same((await create({})).body, invalid('tag', 'tag is required'));
  t.same((await create({ tag: 'web' })).body, invalid('tag', 'Unknown template tag: web'));
  t.same((await create({ tag: 3 })).body, invalid('tag', 'Not a valid string.'));
  t.equal((await create({ tag: 'llm-analytics' }, '')).status, 401);
  const reader = await makeMember(db, a, 1, ['dashboard:read']);
  t.equal((await create({ tag: 'llm-analytics' }, reader.key)).status, 403);
  t.equal((await create({ tag: 'llm-analytics' }, b.key)).status, 403, "another organization's project");
});

t.test('dashboards_stream_tiles_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const d = await dashboard(a);
  const tiles = ['one', 'two', 'three', 'four'].map((body, i) => ({
    text: { body },
    layouts: { sm: { x: (i % 2) * 6, y: Math.floor(i / 2) * 5, w: 6, h: 5 }, xs: { x: 0, y: (3 - i) * 5, w: 1, h: 5 } },
  }));
  await call('dashboards_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: d.id },
    body: { tiles },
  });
  const stream = (query: Record<string, string> = {}, key = a.key, id = d.id, project = a.project.id) =>
    call('dashboards_stream_tiles_retrieve', { key, params: { project_id: project, id }, query });
  const events = (raw: string) =>
    raw
      .split('\n\n')
      .filter(Boolean)
      .map((chunk) => JSON.parse(chunk.replace(/^data: /, '')));

  const res = await stream();
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^text\/event-stream/);
  const [metadata, ...rest] = events(res.raw);
  t.equal(metadata.type, 'metadata');
  t.match(metadata.dashboard, { id: d.id, name: 'Dash', team_id: a.project.id, last_accessed_at: /^\d{4}-/ });
  t.notOk('use_template' in metadata.dashboard, 'no write-only fields');
  t.same(
    metadata.dashboard.tiles.map((x: any) => [x.order, x.text.body]),
    [
      [0, 'one'],
      [1, 'two'],
    ],
    'the first two tiles come with the metadata',
  );
  t.same(
    rest.map((e) => [e.type, e.order, e.tile?.text.body]),
    [
      ['tile', 2, 'three'],
      ['tile', 3, 'four'],
      ['complete', undefined, undefined],
    ],
  );

  const xs = events((await stream({ layoutSize: 'xs' })).raw);
  t.same(
    xs[0].dashboard.tiles.map((x: any) => x.text.body),
    ['four', 'three'],
    'layoutSize picks the grid',
  );

  t.same((await stream({}, a.key, 999999)).body, notFound);
  t.equal((await stream({}, '')).status, 401);
  t.equal((await stream({}, b.key)).status, 403, "another organization's project");
  const theirs = await dashboard(b);
  t.equal((await stream({}, a.key, theirs.id)).status, 404, "another tenant's dashboard on my path");
});

t.test('list items: PostgreSQL writes them, field for field what a retrieve answers', async (t) => {
  const a = await makeTenant(db);
  const member = await makeMember(db, a, 1);
  const admin = await makeMember(db, a, 8);
  const params = { project_id: a.project.id };
  const pinned = await dashboard(a, { name: 'Pinned "quoted" ünïcode', pinned: true, tags: ['web', 'sales'] });
  const restricted = await dashboard(a, { name: 'Restricted', restriction_level: 37, description: 'line\nbreak' });
  const collaborated = await dashboard(a, { name: 'Collaborated', restriction_level: 37 });
  const own = await dashboard(a, { name: 'Own' }, member.key);
  const refreshed = await dashboard(a, { name: 'Refreshed', last_refresh: '2026-01-02T03:04:05.678Z' });
  const byAdmin = await dashboard(a, { name: 'By admin' }, admin.key);
  await call('dashboards_collaborators_create', {
    key: a.key,
    params: { ...params, dashboard_id: collaborated.id },
    body: { user_uuid: member.user.uuid, level: 37 },
  });
  await call('dashboards_sharing_partial_update', {
    key: a.key,
    params: { ...params, dashboard_id: pinned.id },
    body: { enabled: true },
  });
  // A dashboard whose creator is gone from the users table shows no creator.
  await db.execute(sql`update dashboards set created_by_id = null where id = ${byAdmin.id}`);
  const ids = [pinned, restricted, collaborated, own, refreshed, byAdmin].map((d) => d.id);
  const fields = Object.keys((spec.components!.schemas!.DashboardBasic as { properties: object }).properties).sort();
  for (const [who, key] of [
    ['owner', a.key],
    ['member', member.key],
    ['admin', admin.key],
  ] as const) {
    // Retrieves first: they record the read in last_accessed_at, which the list then shows too.
    const retrieved = new Map<number, Record<string, unknown>>();
    for (const id of ids) retrieved.set(id, { ...(await retrieve(a, id, key)).body });
    const res = await call('dashboards_list', { key, params });
    t.equal(res.status, 200);
    t.match(res.headers['content-type'], /^application\/json; charset=utf-8/);
    t.equal(res.body.count, ids.length);
    t.equal(res.body.results[0]!.id, pinned.id, 'pinned first');
    for (const item of res.body.results) {
      t.same(Object.keys(item).sort(), fields, `${who}: exactly the contract's fields`);
      const full = retrieved.get(item.id)!;
      const expected = Object.fromEntries(fields.map((f) => [f, full[f]]));
      t.same(item, expected, `${who}: ${item.name} as a retrieve shows it`);
    }
  }
  const asMember = (await call('dashboards_list', { key: member.key, params })).body.results;
  const level = (id: number) => asMember.find((d) => d.id === id)!;
  t.match(level(restricted.id), { effective_privilege_level: 21, user_access_level: 'viewer' });
  t.match(level(collaborated.id), { effective_privilege_level: 37, user_access_level: 'editor' });
  t.match(level(own.id), { effective_privilege_level: 37, user_access_level: 'manager' });
  t.match(level(pinned.id), { is_shared: true, tags: ['sales', 'web'], access_control_version: 'v2' });
  t.match(level(restricted.id), { access_control_version: 'v1', description: 'line\nbreak' });
  t.match(level(refreshed.id), { last_refresh: '2026-01-02T03:04:05.678Z' });
  t.equal(level(byAdmin.id).created_by, null);
  t.match(level(own.id).created_by, { id: member.user.id, email: member.user.email });
});
