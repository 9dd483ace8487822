import type { Test } from 'tap';
import type { Family } from '../../src/plugins/queries.js';
import type { TestContext } from './app.js';
import { makeKey, makeMember, makeTenant, type Tenant } from './factories.js';
import { makePlugin, op, OTHER, setAccessLevel, type FileServer } from './plugins.js';

const ACCESS = "Your organization's plugin access level is insufficient.";

/** The collection actions of one family: activity, exports_unsubscribe_configs, repository and unused. */
export async function familyCollectionSuite(
  t: Test,
  ctx: TestContext,
  family: Family,
  server: FileServer,
): Promise<void> {
  const { call, db, app } = ctx;
  const other = OTHER[family];
  const org = (tenant: Tenant) => ({ organization_id: tenant.organization.id });
  const configure = async (tenant: Tenant, plugin: number, enabled: boolean, project = tenant.project.id) => {
    const res = await call('plugin_configs_create', {
      key: tenant.key,
      params: { project_id: project },
      body: { plugin, enabled, order: 1, config: { host: 'h' } },
    });
    if (res.status !== 201) throw new Error(res.raw);
    return res.body;
  };
  const refusals = async (t: Test, action: string, a: Tenant) => {
    t.equal((await call(op(family, action), { params: org(a) })).status, 401);
    const noScope = await makeKey(db, a.user, ['dashboard:read']);
    t.match(await call(op(family, action), { key: noScope, params: org(a) }), {
      status: 403,
      body: { detail: "API key missing required scope 'plugin:read'" },
    });
    t.match(await call(op(family, action), { key: a.key, params: { organization_id: 'not-an-org' } }), {
      status: 404,
      body: { detail: 'Organization not found.' },
    });
    const b = await makeTenant(db);
    t.equal((await call(op(family, action), { key: b.key, params: org(a) })).status, 403, 'a non-member is refused');
    await setAccessLevel(db, a, 0);
    t.match(await call(op(family, action), { key: a.key, params: org(a) }), { status: 403, body: { detail: ACCESS } });
    await setAccessLevel(db, a, 9);
  };

  await t.test(`${family}_activity_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const member = await makeMember(db, a, 1);
    const plugin = await makePlugin(ctx, a, family, { name: 'Tracked' });
    await call(op(family, 'partial_update'), {
      key: member.key,
      params: { ...org(a), id: plugin.id },
      body: { name: 'Tracked 2' },
    });
    const config = await configure(a, plugin.id, true);
    await call('plugin_configs_partial_update', {
      key: a.key,
      params: { project_id: a.project.id, id: config.id },
      body: { enabled: false },
    });
    await call(op(family, 'destroy'), { key: a.key, params: { ...org(a), id: plugin.id } });
    await makePlugin(ctx, b, family);

    const res = await call(op(family, 'activity_retrieve'), { key: a.key, params: org(a) });
    t.equal(res.status, 200);
    t.equal(res.body.total_count, 5, "only this organization's activity");
    t.same(
      res.body.results.map((e: { scope: string; activity: string }) => `${e.scope} ${e.activity}`),
      ['Plugin deleted', 'PluginConfig updated', 'PluginConfig created', 'Plugin updated', 'Plugin created'],
      'newest first',
    );
    const renamed = res.body.results[3];
    t.match(renamed, {
      item_id: String(plugin.id),
      user: { id: member.user.id, email: member.user.email },
      detail: { name: 'Tracked 2' },
    });
    t.same(renamed.detail.changes, [
      { type: 'Plugin', action: 'changed', field: 'name', before: 'Tracked', after: 'Tracked 2' },
    ]);
    t.same(res.body.results[1].detail.changes, [
      { type: 'PluginConfig', action: 'changed', field: 'enabled', before: true, after: false },
    ]);
    t.equal(res.body.next, null);
    t.equal(res.body.previous, null);

    const page = await call(op(family, 'activity_retrieve'), {
      key: a.key,
      params: org(a),
      query: { limit: 2, page: 2 },
    });
    t.same(
      page.body.results.map((e: { activity: string }) => e.activity),
      ['created', 'updated'],
    );
    t.match(page.body.next, /page=3/);
    t.match(page.body.previous, /\?limit=2&page=1$/);
    t.match(await call(op(family, 'activity_retrieve'), { key: a.key, params: org(a), query: { page: 0 } }), {
      status: 400,
      body: { attr: 'page' },
    });
    await refusals(t, 'activity_retrieve', a);
  });

  await t.test(`${family}_exports_unsubscribe_configs_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const destination = await makePlugin(ctx, a, 'pipeline_destinations', {
      config_schema: [{ key: 'apiKey', secret: true }],
    });
    const frontend = await makePlugin(ctx, a, 'pipeline_frontend_apps');
    const globalTransformation = await makePlugin(ctx, b, 'pipeline_transformations', { is_global: true });
    const importer = await makePlugin(ctx, a, 'pipeline_import_apps');
    const exporting = await configure(a, destination.id, true);
    await call('plugin_configs_partial_update', {
      key: a.key,
      params: { project_id: a.project.id, id: exporting.id },
      body: { config: { apiKey: 'hunter2' } },
    });
    await configure(a, frontend.id, true);
    await configure(a, globalTransformation.id, true);
    await configure(a, importer.id, false);
    await configure(b, (await makePlugin(ctx, b, 'pipeline_destinations')).id, true);
    const res = await call(op(family, 'exports_unsubscribe_configs_retrieve'), { key: a.key, params: org(a) });
    t.equal(res.status, 200);
    t.same(
      res.body.map((c: { id: number }) => c.id),
      [exporting.id],
      'only enabled configs that send data out',
    );
    t.match(res.body[0], {
      plugin: destination.id,
      enabled: true,
      config: { apiKey: '**************** POSTHOG SECRET FIELD ****************' },
    });
    t.equal(res.body[0].plugin_info.id, destination.id);
    await refusals(t, 'exports_unsubscribe_configs_retrieve', a);
  });

  await t.test(`${family}_repository_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const catalogue = [
      { name: 'Hello', url: 'https://example.com/hello.zip', type: 'data_in', maintainer: 'community' },
    ];
    server.set('/repository.json', JSON.stringify(catalogue));
    const get = () => call(op(family, 'repository_retrieve'), { key: a.key, params: org(a) });
    const res = await get();
    t.equal(res.status, 200);
    t.same(res.body, catalogue);
    server.set('/repository.json', '{"not": "a list"}');
    t.match(await get(), { status: 400, body: { detail: /did not answer with a JSON list/ } });
    server.set('/repository.json', 'down', 503);
    t.match(await get(), {
      status: 400,
      body: { detail: /Could not download the plugin repository from .*: HTTP 503/ },
    });
    const configured = app.config.pluginRepositoryUrl;
    app.config.pluginRepositoryUrl = server.deadUrl;
    t.match(await get(), { status: 400, body: { detail: /Could not download the plugin repository/ } });
    app.config.pluginRepositoryUrl = undefined;
    t.match(await get(), { status: 400, body: { attr: null, detail: /not configured.*PLUGIN_REPOSITORY_URL/ } });
    app.config.pluginRepositoryUrl = configured;
    server.set('/repository.json', JSON.stringify(catalogue));
    await refusals(t, 'repository_retrieve', a);
  });

  await t.test(`${family}_unused_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const used = await makePlugin(ctx, a, family);
    const idle = await makePlugin(ctx, a, family);
    const disabled = await makePlugin(ctx, a, family);
    const elsewhere = await makePlugin(ctx, a, other);
    const theirs = await makePlugin(ctx, b, family);
    const usedByOthers = await makePlugin(ctx, a, family, { is_global: true });
    await configure(a, used.id, true);
    await configure(a, disabled.id, false);
    await configure(b, usedByOthers.id, true);
    const res = await call(op(family, 'unused_retrieve'), { key: a.key, params: org(a) });
    t.equal(res.status, 200);
    t.ok(res.body.includes(idle.id) && res.body.includes(disabled.id), 'plugins without an enabled config');
    t.notOk(res.body.includes(used.id), 'an enabled plugin is used');
    t.notOk(res.body.includes(usedByOthers.id), 'enabled in any organization counts');
    t.notOk(res.body.includes(elsewhere.id), 'another family is not listed');
    t.notOk(res.body.includes(theirs.id), "another organization's private plugin is not listed");
    t.same(
      res.body,
      [...res.body].sort((x: number, y: number) => x - y),
      'ascending',
    );
    await refusals(t, 'unused_retrieve', a);
  });
}
