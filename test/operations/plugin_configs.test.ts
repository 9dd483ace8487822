import t from 'tap';
import { eq } from 'drizzle-orm';
import { users } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant, type Tenant } from '../helpers/factories.js';
import { CONFIG_SCHEMA, makePlugin, SECRET, setAccessLevel } from '../helpers/plugins.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const NOT_FOUND = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };

async function setup() {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const plugin = await makePlugin(ctx, a, 'pipeline_destinations', {
    name: 'Webhook',
    description: 'Sends',
    config_schema: CONFIG_SCHEMA,
  });
  return { a, b, plugin };
}

function create(tenant: Tenant, body: unknown, key = tenant.key, project: number | string = tenant.project.id) {
  return call('plugin_configs_create', { key, params: { project_id: project }, body });
}

t.test('plugin_configs_create', async (t) => {
  const { a, b, plugin } = await setup();
  const res = await create(a, {
    plugin: plugin.id,
    enabled: true,
    order: 2,
    config: { host: 'h.example', apiKey: 'hunter2' },
    team_id: 999,
  });
  t.equal(res.status, 201);
  t.match(res.body, {
    plugin: plugin.id,
    enabled: true,
    order: 2,
    team_id: a.project.id,
    error: null,
    deleted: false,
    name: 'Webhook',
    description: 'Sends',
    delivery_rate_24h: null,
  });
  t.same(res.body.config, { host: 'h.example', apiKey: SECRET }, 'secret fields are masked');
  t.equal(res.body.plugin_info.id, plugin.id);
  t.notOk(res.raw.includes('hunter2'), 'the secret never leaves the server');
  const named = await create(a, { plugin: plugin.id, order: 1, name: 'Mine' });
  t.match(named.body, { name: 'Mine', enabled: false, config: {} });

  const global_ = await makePlugin(ctx, b, 'pipeline_transformations', { is_global: true });
  t.equal(
    (await create(a, { plugin: global_.id, order: 1 })).status,
    201,
    "another organization's global plugin can be configured",
  );
  const private_ = await makePlugin(ctx, b, 'pipeline_transformations');
  t.same((await create(a, { plugin: private_.id, order: 1 })).body, {
    type: 'validation_error',
    code: 'does_not_exist',
    detail: `Invalid pk "${private_.id}" - object does not exist.`,
    attr: 'plugin',
  });
  t.match(await create(a, { order: 1 }), { status: 400, body: { code: 'required', attr: 'plugin' } });
  t.match(await create(a, { plugin: plugin.id }), { status: 400, body: { code: 'required', attr: 'order' } });
  t.match(await create(a, { plugin: plugin.id, order: 'first' }), { status: 400, body: { attr: 'order' } });
  t.match(await create(a, { plugin: plugin.id, order: 1, config: [] }), { status: 400, body: { attr: 'config' } });
  t.match(await create(a, { plugin: plugin.id, order: 1, enabled: 'true' }), {
    status: 400,
    body: { attr: 'enabled' },
  });
  t.equal((await call('plugin_configs_list', { key: a.key, params: { project_id: a.project.id } })).body.count, 3);

  t.equal((await call('plugin_configs_create', { params: { project_id: a.project.id }, body: {} })).status, 401);
  const reader = await makeKey(db, a.user, ['plugin:read']);
  t.match(await create(a, { plugin: plugin.id, order: 1 }, reader), {
    status: 403,
    body: { detail: "API key missing required scope 'plugin:write'" },
  });
  t.match(await create(a, { plugin: plugin.id, order: 1 }, b.key), {
    status: 403,
    body: { detail: "You don't have access to the project." },
  });
  const member = await makeMember(db, a, 1);
  t.equal((await create(a, { plugin: plugin.id, order: 1 }, member.key)).status, 201, 'any member may configure');
  await setAccessLevel(db, a, 0);
  t.same((await create(a, { plugin: plugin.id, order: 1 })).body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'Plugin configuration is not available for the current organization!',
    attr: null,
  });
});

t.test('plugin_configs_list', async (t) => {
  const { a, b, plugin } = await setup();
  const second = await create(a, { plugin: plugin.id, order: 5, enabled: true });
  const first = await create(a, { plugin: plugin.id, order: 1, config: { apiKey: 'k' } });
  const gone = await create(a, { plugin: plugin.id, order: 0 });
  await call('plugin_configs_destroy', { key: a.key, params: { project_id: a.project.id, id: gone.body.id } });
  const otherProject = await makeProject(db, a);
  await create(a, { plugin: plugin.id, order: 0 }, a.key, otherProject.id);
  await create(b, { plugin: (await makePlugin(ctx, b, 'pipeline_destinations')).id, order: 0 });
  const res = await call('plugin_configs_list', { key: a.key, params: { project_id: a.project.id } });
  t.equal(res.status, 200);
  t.same(
    res.body.results.map((c: { id: number }) => c.id),
    [first.body.id, second.body.id],
    'by order; deleted and other projects left out',
  );
  t.equal(res.body.results[0].plugin_info, null, 'lists leave plugin_info out');
  t.equal(res.body.results[0].config.apiKey, SECRET);
  const page = await call('plugin_configs_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { limit: 1 },
  });
  t.match(page.body, { count: 2, next: /offset=1/ });
  const current = await call('plugin_configs_list', { key: a.key, params: { project_id: '@current' } });
  t.equal(current.body.count, 2);
  t.match(
    await call('plugin_configs_list', {
      key: a.key,
      params: { project_id: a.project.id },
      query: { offset: 'x' as never },
    }),
    {
      status: 400,
      body: { attr: 'offset' },
    },
  );
  t.equal((await call('plugin_configs_list', { params: { project_id: a.project.id } })).status, 401);
  const noScope = await makeKey(db, a.user, ['dashboard:read']);
  t.equal((await call('plugin_configs_list', { key: noScope, params: { project_id: a.project.id } })).status, 403);
  t.equal((await call('plugin_configs_list', { key: b.key, params: { project_id: a.project.id } })).status, 403);
  t.match(await call('plugin_configs_list', { key: a.key, params: { project_id: 99999999 } }), {
    status: 404,
    body: { detail: 'Project not found.' },
  });
  await setAccessLevel(db, a, 0);
  t.equal(
    (await call('plugin_configs_list', { key: a.key, params: { project_id: a.project.id } })).body.count,
    0,
    'none below config level',
  );
});

t.test('plugin_configs_retrieve', async (t) => {
  const { a, b, plugin } = await setup();
  const made = await create(a, { plugin: plugin.id, order: 1, config: { apiKey: 'k', host: 'x' } });
  const get = (id: number | string, key = a.key, project: number = a.project.id) =>
    call('plugin_configs_retrieve', { key, params: { project_id: project, id } });
  const res = await get(made.body.id);
  t.equal(res.status, 200);
  t.same(res.body, made.body);
  const otherProject = await makeProject(db, a);
  t.same((await get(made.body.id, a.key, otherProject.id)).body, NOT_FOUND, "another project's config is a 404");
  const theirs = await create(b, { plugin: (await makePlugin(ctx, b, 'pipeline_destinations')).id, order: 0 });
  t.equal((await get(theirs.body.id)).status, 404, "another organization's config is a 404");
  t.match(await get('abc'), { status: 400, body: { attr: 'id' } });
  t.equal(
    (await call('plugin_configs_retrieve', { params: { project_id: a.project.id, id: made.body.id } })).status,
    401,
  );
  t.equal((await get(made.body.id, await makeKey(db, a.user, ['dashboard:read']))).status, 403);
  await call('plugin_configs_destroy', { key: a.key, params: { project_id: a.project.id, id: made.body.id } });
  t.match((await get(made.body.id)).body, { deleted: true, enabled: false }, 'a deleted config can still be read');
  await setAccessLevel(db, a, 0);
  t.equal((await get(made.body.id)).status, 404);
});

t.test('plugin_configs_partial_update', async (t) => {
  const { a, b, plugin } = await setup();
  const made = await create(a, {
    plugin: plugin.id,
    order: 1,
    enabled: true,
    config: { host: 'h', apiKey: 'first-secret-value' },
  });
  const patch = (body: unknown, key = a.key, id: number | string = made.body.id) =>
    call('plugin_configs_partial_update', { key, params: { project_id: a.project.id, id }, body });
  const other = await makePlugin(ctx, a, 'pipeline_destinations');
  const res = await patch({ order: 7, plugin: other.id, config: { host: 'h2', apiKey: SECRET } });
  t.equal(res.status, 200);
  t.match(res.body, { order: 7, plugin: plugin.id, config: { host: 'h2', apiKey: SECRET } }, 'plugin cannot change');
  await patch({ config: { host: 'h3' } });
  await patch({ config: { host: 'h3', apiKey: null } });
  const activity = await call('pipeline_destinations_activity_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id },
    query: { limit: 3 },
  });
  t.same(
    activity.body.results[0].detail.changes,
    [{ type: 'PluginConfig', action: 'changed', field: 'config.host', before: 'h2', after: 'h3' }],
    'the secret kept its value through a masked, a missing and a null value',
  );
  t.same(activity.body.results[1].detail.changes, [
    { type: 'PluginConfig', action: 'changed', field: 'order', before: 1, after: 7 },
    { type: 'PluginConfig', action: 'changed', field: 'config.host', before: 'h', after: 'h2' },
  ]);
  const changed = await patch({ config: { host: 'h3', apiKey: 'second-secret-value' } });
  t.equal(changed.body.config.apiKey, SECRET);
  const log = await call('pipeline_destinations_activity_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id },
  });
  t.same(
    log.body.results[0].detail.changes,
    [{ type: 'PluginConfig', action: 'changed', field: 'config.apiKey', before: SECRET, after: SECRET }],
    'a changed secret is logged masked',
  );
  t.notOk(
    log.raw.includes('second-secret-value') || log.raw.includes('first-secret-value'),
    'no secret in the activity log',
  );
  const deleted = await patch({ deleted: true });
  t.match(deleted.body, { deleted: true, enabled: false }, 'deleting disables');
  t.match(await patch({ order: 'x' }), { status: 400, body: { attr: 'order' } });
  t.match(await patch({ name: 'x'.repeat(401) }), { status: 400, body: { attr: 'name' } });
  t.equal((await patch({ order: 1 }, a.key, 99999999)).status, 404);
  const theirs = await create(b, { plugin: (await makePlugin(ctx, b, 'pipeline_destinations')).id, order: 0 });
  t.equal((await patch({ order: 1 }, a.key, theirs.body.id)).status, 404);
  t.equal(
    (await call('plugin_configs_partial_update', { params: { project_id: a.project.id, id: made.body.id }, body: {} }))
      .status,
    401,
  );
  t.equal((await patch({ order: 1 }, await makeKey(db, a.user, ['plugin:read']))).status, 403);
  await setAccessLevel(db, a, 0);
  t.equal((await patch({ order: 1 })).status, 404);
});

t.test('plugin_configs_destroy', async (t) => {
  const { a, b, plugin } = await setup();
  const made = await create(a, { plugin: plugin.id, order: 1, enabled: true });
  const del = (id: number | string, key = a.key) =>
    call('plugin_configs_destroy', { key, params: { project_id: a.project.id, id } });
  t.equal((await del(made.body.id, await makeKey(db, a.user, ['plugin:read']))).status, 403);
  t.equal(
    (await call('plugin_configs_destroy', { params: { project_id: a.project.id, id: made.body.id } })).status,
    401,
  );
  t.equal((await del(made.body.id)).status, 204);
  const list = await call('plugin_configs_list', { key: a.key, params: { project_id: a.project.id } });
  t.equal(list.body.count, 0);
  const unused = await call('pipeline_destinations_unused_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id },
  });
  t.ok(unused.body.includes(plugin.id), 'a deleted config no longer uses its plugin');
  const theirs = await create(b, { plugin: (await makePlugin(ctx, b, 'pipeline_destinations')).id, order: 0 });
  t.equal((await del(theirs.body.id)).status, 404);
  t.match(await del('abc'), { status: 400, body: { attr: 'id' } });
  const activity = await call('pipeline_destinations_activity_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id },
  });
  t.match(activity.body.results[0], {
    scope: 'PluginConfig',
    activity: 'deleted',
    item_id: String(made.body.id),
    detail: { name: plugin.name },
  });
  await setAccessLevel(db, a, 0);
  t.equal((await del(made.body.id)).status, 404);
});

t.test('a configured plugin becomes visible to the organization', async (t) => {
  const { a, b } = await setup();
  const global_ = await makePlugin(ctx, b, 'pipeline_destinations', { is_global: true });
  await create(a, { plugin: global_.id, order: 0 });
  await call('pipeline_destinations_partial_update', {
    key: b.key,
    params: { organization_id: b.organization.id, id: global_.id },
    body: { is_global: false },
  });
  const seen = await call('pipeline_destinations_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, id: global_.id },
  });
  t.equal(seen.status, 200, 'still visible through its config after it stopped being global');
});

t.test('activity keeps entries of deleted users, with no user', async (t) => {
  const { a, plugin } = await setup();
  const member = await makeMember(db, a, 1);
  const made = await create(a, { plugin: plugin.id, order: 0 }, member.key);
  await db.delete(users).where(eq(users.id, member.user.id));
  const res = await call('pipeline_destinations_activity_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id },
  });
  t.match(res.body.results[0], {
    scope: 'PluginConfig',
    activity: 'created',
    item_id: String(made.body.id),
    user: null,
  });
});

t.test('local plugins are refused when the server has no PLUGIN_LOCAL_DIR', async (t) => {
  const a = await makeTenant(db);
  const res = await call('pipeline_import_apps_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: { plugin_type: 'local', url: 'file:/etc' },
  });
  t.match(res, { status: 400, body: { attr: 'url', detail: /Local plugins are not enabled on this server/ } });
});

t.test('plugin_configs_logs_list: the entries the server wrote for the config', async (t) => {
  const { a, b, plugin } = await setup();
  const made = await create(a, { plugin: plugin.id, enabled: false, order: 1, config: { host: 'h.example' } });
  const params = { project_id: a.project.id, id: made.body.id };
  await call('plugin_configs_partial_update', {
    key: a.key,
    params,
    body: { enabled: true, config: { host: 'other.example' } },
  });
  const res = await call('plugin_configs_logs_list', { key: a.key, params });
  t.equal(res.status, 200);
  t.same(res.body.results.map((e: any) => [e.source, e.type, e.message]).reverse(), [
    ['SYSTEM', 'INFO', 'Plugin config created (disabled).'],
    ['SYSTEM', 'INFO', 'Plugin settings changed: host.'],
    ['SYSTEM', 'INFO', 'Plugin enabled.'],
    ['SYSTEM', 'WARN', 'Plugin code does not run on this server: no events pass through this plugin.'],
  ]);
  t.match(res.body.results[0], { team_id: a.project.id, plugin_id: plugin.id, plugin_config_id: made.body.id });
  t.equal(new Set(res.body.results.slice(0, 3).map((e: any) => e.instance_id)).size, 1, 'one write, one instance_id');
  const warn = await call('plugin_configs_logs_list', { key: a.key, params, query: { type_filter: ['WARN'] } });
  t.equal(warn.body.count, 1);
  const search = await call('plugin_configs_logs_list', { key: a.key, params, query: { search: 'SETTINGS' } });
  t.equal(search.body.count, 1);
  const paged = await call('plugin_configs_logs_list', { key: a.key, params, query: { limit: 1, offset: 1 } });
  t.equal(paged.body.results.length, 1);
  t.ok(paged.body.next && paged.body.previous);
  t.equal((await call('plugin_configs_logs_list', { params })).status, 401);
  t.equal((await call('plugin_configs_logs_list', { key: b.key, params })).status, 403, "another tenant's project");
  t.equal(
    (await call('plugin_configs_logs_list', { key: b.key, params: { project_id: b.project.id, id: made.body.id } }))
      .status,
    404,
    "another tenant's config on its own path",
  );
  t.equal((await call('plugin_configs_logs_list', { key: a.key, params, query: { after: 'yesterday' } })).status, 400);
});
