import type { Test } from 'tap';
import type { Family } from '../../src/plugins/queries.js';
import type { TestContext } from './app.js';
import { makeKey, makeTenant, type Tenant } from './factories.js';
import {
  archiveFiles,
  CAPABILITIES,
  makePlugin,
  op,
  OTHER,
  setAccessLevel,
  SOURCES,
  zipArchive,
  type FileServer,
} from './plugins.js';

const ACCESS = "Your organization's plugin access level is insufficient.";
const MANAGED = 'This plugin is managed by another organization.';

/** The detail actions of one family: check_for_updates, source, update_source and upgrade. */
export async function familyActionsSuite(t: Test, ctx: TestContext, family: Family, server: FileServer): Promise<void> {
  const { call, db } = ctx;
  const other = OTHER[family];
  const params = (tenant: Tenant, id: number | string) => ({ organization_id: tenant.organization.id, id });
  const install = async (tenant: Tenant, path: string, version: string, extra: Record<string, unknown> = {}) => {
    server.set(path, zipArchive(archiveFiles(family, `Archived ${version}`, version)));
    const res = await call(op(family, 'create'), {
      key: tenant.key,
      params: { organization_id: tenant.organization.id },
      body: { plugin_type: 'custom', url: server.url(path), ...extra },
    });
    if (res.status !== 201) throw new Error(res.raw);
    return res.body;
  };

  await t.test(`${family}_check_for_updates_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const path = `/${family}/check.zip`;
    const plugin = await install(a, path, '1.0.0');
    const check = (id: number | string, key = a.key) =>
      call(op(family, 'check_for_updates_retrieve'), { key, params: params(a, id) });
    const same = await check(plugin.id);
    t.equal(same.status, 200);
    t.match(same.body.plugin, { id: plugin.id, tag: '1.0.0', latest_tag: '1.0.0' });
    server.set(path, zipArchive(archiveFiles(family, 'Archived 2', '2.0.0')));
    const newer = await check(plugin.id);
    t.match(newer.body.plugin, { tag: '1.0.0', latest_tag: '2.0.0', name: 'Archived 1.0.0' }, 'only latest_tag moves');
    server.set(path, 'gone', 500);
    t.match(await check(plugin.id), { status: 400, body: { attr: null, detail: /HTTP 500/ } });
    const kept = await call(op(family, 'retrieve'), { key: a.key, params: params(a, plugin.id) });
    t.equal(kept.body.latest_tag, '2.0.0', 'a failed check changes nothing');
    const source = await makePlugin(ctx, a, family);
    t.match(await check(source.id), { status: 400, body: { detail: /Only plugins installed from an http\(s\) url/ } });
    t.equal(
      (await check((await makePlugin(ctx, b, family, { is_global: true })).id)).status,
      404,
      "another organization's: 404",
    );
    t.equal((await check((await makePlugin(ctx, a, other)).id)).status, 404, 'another family: 404');
    t.match(await check('abc'), { status: 400, body: { attr: 'id' } });
    t.equal((await call(op(family, 'check_for_updates_retrieve'), { params: params(a, plugin.id) })).status, 401);
    t.equal((await check(plugin.id, await makeKey(db, a.user, ['dashboard:read']))).status, 403);
    await setAccessLevel(db, a, 3);
    t.match(await check(plugin.id), {
      status: 403,
      body: { detail: 'Plugin installation is not available for the current organization!' },
    });
    await setAccessLevel(db, a, 0);
    t.match(await check(plugin.id), { status: 403, body: { detail: ACCESS } });
  });

  await t.test(`${family}_source_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const plugin = await install(a, `/${family}/source.zip`, '1.0.0');
    const read = (id: number | string, key = a.key) =>
      call(op(family, 'source_retrieve'), { key, params: params(a, id) });
    const res = await read(plugin.id);
    t.equal(res.status, 200);
    t.same(JSON.parse(res.body['plugin.json']).name, 'Archived 1.0.0');
    t.notOk('README.md' in res.body, 'only plugin code is kept');
    t.same((await read((await makePlugin(ctx, a, family)).id)).body, {}, 'a new source plugin has no files');
    t.equal((await read((await makePlugin(ctx, b, family, { is_global: true })).id)).status, 404);
    t.equal((await read((await makePlugin(ctx, a, other)).id)).status, 404, 'another family: 404');
    t.match(await read('abc'), { status: 400, body: { attr: 'id' } });
    t.equal((await call(op(family, 'source_retrieve'), { params: params(a, plugin.id) })).status, 401);
    t.equal((await read(plugin.id, await makeKey(db, a.user, ['dashboard:read']))).status, 403);
    await setAccessLevel(db, a, 3);
    t.match(await read(plugin.id), {
      status: 403,
      body: { detail: 'Plugin source editing is not available for the current organization!' },
    });
  });

  await t.test(`${family}_update_source_partial_update`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const plugin = await makePlugin(ctx, a, other, { capabilities: {} });
    const write = (id: number | string, body: unknown, key = a.key, fam = family) =>
      call(op(fam, 'update_source_partial_update'), { key, params: params(a, id), body });
    // A fresh source plugin has no capabilities: a frontend app. Writing this family's index.ts moves it here.
    const viaFrontend = await write(plugin.id, { 'index.ts': SOURCES[family] }, a.key, 'pipeline_frontend_apps');
    t.equal(viaFrontend.status, 200);
    const json = JSON.stringify({ name: 'From source', config: [{ key: 'token', secret: true }] });
    const res = await write(plugin.id, { 'plugin.json': json, 'site.ts': 'export function inject() {}' });
    t.equal(res.status, 200);
    t.same(res.body, { 'index.ts': SOURCES[family], 'plugin.json': json, 'site.ts': 'export function inject() {}' });
    const got = await call(op(family, 'retrieve'), { key: a.key, params: params(a, plugin.id) });
    t.match(got.body, { name: 'From source', config_schema: [{ key: 'token', secret: true }] });
    t.same(got.body.capabilities, CAPABILITIES[family], 'capabilities follow index.ts');
    t.same(
      (await write(plugin.id, { 'site.ts': null })).body,
      { 'index.ts': SOURCES[family], 'plugin.json': json },
      'null deletes',
    );

    const moved = await write(plugin.id, { 'index.ts': SOURCES[other] });
    t.equal(moved.status, 200);
    t.equal(
      (await call(op(family, 'retrieve'), { key: a.key, params: params(a, plugin.id) })).status,
      404,
      'it left this family',
    );
    const there = await call(op(other, 'retrieve'), { key: a.key, params: params(a, plugin.id) });
    t.same(there.body.capabilities, CAPABILITIES[other]);
    t.equal((await write(plugin.id, { 'index.ts': SOURCES[family] }, a.key, other)).status, 200, 'and moves back');

    const badJson = await write(plugin.id, { 'plugin.json': '{"name": ', 'index.ts': SOURCES[other] });
    t.match(badJson, { status: 400, body: { attr: 'plugin.json', detail: /Could not parse plugin.json/ } });
    t.match(await write(plugin.id, { 'plugin.json': '[1]' }), { status: 400, body: { attr: 'plugin.json' } });
    t.match(await write(plugin.id, { 'plugin.json': '{"name": 5}' }), { status: 400, body: { attr: 'plugin.json' } });
    t.match(await write(plugin.id, { 'index.ts': 'export function broken( {' }), {
      status: 400,
      body: { attr: 'index.ts', detail: /Could not parse index.ts/ },
    });
    t.match(await write(plugin.id, { '../evil.ts': 'x' }), { status: 400, body: { attr: '../evil.ts' } });
    t.match(await write(plugin.id, { 'index.ts': 5 }), { status: 400, body: { attr: 'index.ts' } });
    t.match(await write(plugin.id, ['index.ts']), { status: 400, body: { code: 'invalid_input' } });
    const unchanged = await call(op(family, 'source_retrieve'), { key: a.key, params: params(a, plugin.id) });
    t.same(unchanged.body, { 'index.ts': SOURCES[family], 'plugin.json': json }, 'refused writes change nothing');
    t.equal(
      (await call(op(family, 'retrieve'), { key: a.key, params: params(a, plugin.id) })).body.name,
      'From source',
    );

    t.match(await write((await makePlugin(ctx, b, family, { is_global: true })).id, { 'site.ts': 'x' }), {
      status: 403,
      body: { detail: MANAGED },
    });
    t.equal((await write((await makePlugin(ctx, b, family)).id, { 'site.ts': 'x' })).status, 404);
    t.equal((await write((await makePlugin(ctx, a, other)).id, { 'site.ts': 'x' })).status, 404, 'another family: 404');
    t.equal(
      (await call(op(family, 'update_source_partial_update'), { params: params(a, plugin.id), body: {} })).status,
      401,
    );
    t.equal((await write(plugin.id, {}, await makeKey(db, a.user, ['plugin:read']))).status, 403);
    await setAccessLevel(db, a, 3);
    t.match(await write(plugin.id, { 'site.ts': 'x' }), { status: 403, body: { detail: ACCESS } });
  });

  await t.test(`${family}_upgrade_create`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const path = `/${family}/upgrade.zip`;
    const plugin = await install(a, path, '1.0.0');
    const upgrade = (id: number | string, key = a.key, fam = family) =>
      call(op(fam, 'upgrade_create'), { key, params: params(a, id), body: {} });
    const v2 = archiveFiles(family, 'Upgraded', '2.0.0');
    v2['plugin.json'] = JSON.stringify({ name: 'Upgraded', version: '2.0.0', description: 'v2', config: [] });
    v2['frontend.tsx'] = 'export const scene = {}\n';
    server.set(path, zipArchive(v2));
    const res = await upgrade(plugin.id);
    t.equal(res.status, 200);
    t.match(res.body, { id: plugin.id, name: 'Upgraded', description: 'v2', tag: '2.0.0', config_schema: [] });
    const files = await call(op(family, 'source_retrieve'), { key: a.key, params: params(a, plugin.id) });
    t.equal(files.body['frontend.tsx'], 'export const scene = {}\n', 'files are replaced');

    server.set(path, zipArchive({ 'plugin.json': '{"name": "x", "version": "3"}', 'index.ts': SOURCES[other] }));
    const movedAway = await upgrade(plugin.id);
    t.same(movedAway.body.capabilities, CAPABILITIES[other], 'an upgrade can move the plugin to another family');
    t.equal((await upgrade(plugin.id)).status, 404, 'and then it is not in this one');
    server.set(path, zipArchive(v2));
    t.equal((await upgrade(plugin.id, a.key, other)).status, 200);

    server.set(path, 'not an archive');
    t.match(await upgrade(plugin.id), {
      status: 400,
      body: { attr: null, detail: /neither a zip file nor a gzipped tar/ },
    });
    server.set(path, 'missing', 404);
    t.match(await upgrade(plugin.id), { status: 400, body: { detail: /HTTP 404/ } });
    const after = await call(op(family, 'retrieve'), { key: a.key, params: params(a, plugin.id) });
    t.match(after.body, { name: 'Upgraded', tag: '2.0.0' }, 'failed upgrades change nothing');

    const source = await makePlugin(ctx, a, family);
    t.same((await upgrade(source.id)).body, source, 'a source plugin comes back unchanged');
    t.match(await upgrade((await makePlugin(ctx, b, family, { is_global: true })).id), {
      status: 403,
      body: { detail: MANAGED },
    });
    t.equal((await upgrade((await makePlugin(ctx, b, family)).id)).status, 404);
    t.equal((await upgrade((await makePlugin(ctx, a, other)).id)).status, 404, 'another family: 404');
    t.match(await upgrade('abc'), { status: 400, body: { attr: 'id' } });
    t.equal((await call(op(family, 'upgrade_create'), { params: params(a, plugin.id) })).status, 401);
    t.equal((await upgrade(plugin.id, await makeKey(db, a.user, ['plugin:read']))).status, 403);
    await setAccessLevel(db, a, 3);
    t.match(await upgrade(plugin.id), { status: 403, body: { detail: ACCESS } });
  });
}
