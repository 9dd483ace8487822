import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Family } from '../../src/plugins/queries.js';
import type { TestContext } from './app.js';
import { makeKey, makeTenant } from './factories.js';
import {
  archiveFiles,
  CAPABILITIES,
  CONFIG_SCHEMA,
  OTHER,
  makePlugin,
  op,
  setAccessLevel,
  tarGzArchive,
  zipArchive,
  SOURCES,
  type FileServer,
} from './plugins.js';

const NOT_FOUND = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };
const ACCESS = "Your organization's plugin access level is insufficient.";
const MANAGED = 'This plugin is managed by another organization.';

/** List, create, retrieve, partial_update and destroy of one family, against the production app. */
export async function familyCrudSuite(
  t: Test,
  ctx: TestContext,
  family: Family,
  server: FileServer,
  localDir: string,
): Promise<void> {
  const { call, db } = ctx;
  const other = OTHER[family];
  const org = (tenant: { organization: { id: string } }) => ({ organization_id: tenant.organization.id });

  await t.test(`${family}_list`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const mine = await makePlugin(ctx, a, family);
    const elsewhere = await makePlugin(ctx, a, other);
    const private_ = await makePlugin(ctx, b, family);
    const global_ = await makePlugin(ctx, b, family, { is_global: true });
    const res = await call(op(family, 'list'), { key: a.key, params: org(a) });
    t.equal(res.status, 200);
    const ids = res.body.results.map((p: { id: number }) => p.id);
    t.ok(ids.includes(mine.id), 'own plugin of the family is listed');
    t.ok(ids.includes(global_.id), "another organization's global plugin is listed");
    t.notOk(ids.includes(elsewhere.id), 'a plugin of another family is not');
    t.notOk(ids.includes(private_.id), "another organization's private plugin is not");
    const own = res.body.results.find((p: { id: number }) => p.id === mine.id);
    t.match(own, { plugin_type: 'source', organization_id: a.organization.id, organization_name: a.organization.name });
    t.same(own.capabilities, CAPABILITIES[family]);
    const inline = res.body.results.filter((p: { plugin_type: string }) => p.plugin_type === 'inline');
    if (family === 'pipeline_transformations') {
      t.equal(inline.length, 2, 'the inline plugins are global transformations');
      t.match(inline[0], { organization_id: null, organization_name: 'posthog-inline', is_global: true });
    } else t.equal(inline.length, 0);

    const page = await call(op(family, 'list'), { key: a.key, params: org(a), query: { limit: 1, offset: 1 } });
    t.equal(page.body.results.length, 1);
    t.equal(page.body.count, res.body.count);
    t.match(page.body.previous, /limit=1$/);
    const bad = await call(op(family, 'list'), { key: a.key, params: org(a), query: { limit: 'x' as never } });
    t.match(bad, { status: 400, body: { type: 'validation_error', attr: 'limit' } });
    t.equal((await call(op(family, 'list'), { params: org(a) })).status, 401);
    const noScope = await makeKey(db, a.user, ['dashboard:read']);
    const scoped = await call(op(family, 'list'), { key: noScope, params: org(a) });
    t.match(scoped, { status: 403, body: { detail: "API key missing required scope 'plugin:read'" } });
    t.equal((await call(op(family, 'list'), { key: b.key, params: org(a) })).status, 403, 'a non-member is refused');
    await setAccessLevel(db, a, 0);
    t.match(await call(op(family, 'list'), { key: a.key, params: org(a) }), { status: 403, body: { detail: ACCESS } });
    await setAccessLevel(db, a, 3);
    t.equal((await call(op(family, 'list'), { key: a.key, params: org(a) })).status, 200, 'config level may read');
  });

  await t.test(`${family}_create`, async (t) => {
    const a = await makeTenant(db);
    const create = (body: unknown, key = a.key) => call(op(family, 'create'), { key, params: org(a), body });
    const count = async () => (await call(op(family, 'list'), { key: a.key, params: org(a) })).body.count;

    const source = await create({
      plugin_type: 'source',
      name: 'Hand made',
      description: 'd',
      capabilities: CAPABILITIES[family],
    });
    t.equal(source.status, 201);
    t.match(source.body, {
      plugin_type: 'source',
      name: 'Hand made',
      url: null,
      is_global: false,
      hog_function_migration_available: false,
    });

    server.set(`/${family}/zip-1.zip`, zipArchive(archiveFiles(family, 'Zipped', '1.0.0')));
    const zipped = await create({
      plugin_type: 'custom',
      url: server.url(`/${family}/zip-1.zip?private_token=s3cret`),
      name: 'ignored',
    });
    t.equal(zipped.status, 201, zipped.raw);
    t.match(zipped.body, {
      plugin_type: 'custom',
      name: 'Zipped',
      description: 'Zipped from an archive',
      tag: '1.0.0',
    });
    t.equal(zipped.body.url, server.url(`/${family}/zip-1.zip`), 'the private token is not shown');
    t.same(zipped.body.config_schema, CONFIG_SCHEMA);
    t.same(zipped.body.capabilities, CAPABILITIES[family], 'capabilities come from what the main file exports');
    const again = await create({ plugin_type: 'custom', url: server.url(`/${family}/zip-1.zip`) });
    t.match(again, {
      status: 400,
      body: { detail: `Plugin from URL "${server.url(`/${family}/zip-1.zip`)}" already installed!` },
    });

    const files = archiveFiles(family, 'Tarred', '3.1.0');
    const main = files['index.ts'];
    if (main) {
      delete files['index.ts'];
      files['dist/main.ts'] = main;
      files['plugin.json'] = JSON.stringify({ ...JSON.parse(files['plugin.json']!), main: 'dist/main.ts' });
    }
    server.set(`/${family}/pkg.tgz`, await tarGzArchive(files));
    const tarred = await create({ plugin_type: 'repository', url: server.url(`/${family}/pkg.tgz`) });
    t.equal(tarred.status, 201, tarred.raw);
    t.match(tarred.body, { plugin_type: 'repository', name: 'Tarred', tag: '3.1.0' });
    t.same(tarred.body.capabilities, CAPABILITIES[family]);
    const src = await call(op(family, 'source_retrieve'), { key: a.key, params: { ...org(a), id: tarred.body.id } });
    t.same(Object.keys(src.body).sort(), main ? ['index.ts', 'plugin.json'] : ['plugin.json', 'site.ts']);
    if (main)
      t.equal(src.body['index.ts'], SOURCES[family], 'the main file named in plugin.json is stored as index.ts');

    const folder = join(localDir, `${family}-local`);
    mkdirSync(folder, { recursive: true });
    for (const [name, content] of Object.entries(archiveFiles(family, 'On disk', '0.1.0')))
      writeFileSync(join(folder, name), content);
    const local = await create({ url: `file:${family}-local` });
    t.equal(local.status, 201, local.raw);
    t.match(local.body, { plugin_type: 'local', name: 'On disk', tag: null, url: `file:${family}-local` });
    t.same(local.body.capabilities, CAPABILITIES[family]);

    const before = await count();
    const refused = async (body: unknown, attr: string | null, detail: RegExp) => {
      const res = await create(body);
      t.match(res, { status: 400, body: { type: 'validation_error', attr, detail } }, String(detail));
    };
    await refused({ plugin_type: 'custom', url: server.url('/missing.zip') }, 'url', /HTTP 404/);
    await refused({ plugin_type: 'custom', url: server.deadUrl }, 'url', /Could not download the plugin archive/);
    server.set('/garbage.zip', 'PK this is not a zip at all');
    await refused({ url: server.url('/garbage.zip') }, 'url', /not a valid zip/);
    server.set('/text.bin', 'hello');
    await refused({ url: server.url('/text.bin') }, 'url', /neither a zip file nor a gzipped tar/);
    server.set('/nojson.zip', zipArchive({ 'index.ts': SOURCES[family] }));
    await refused({ url: server.url('/nojson.zip') }, 'url', /Could not find plugin.json/);
    server.set('/badjson.zip', zipArchive({ 'plugin.json': '{"name": ', 'index.ts': SOURCES[family] }));
    await refused({ url: server.url('/badjson.zip') }, 'url', /Could not parse plugin.json/);
    server.set('/escape.zip', zipArchive({ 'plugin.json': '{"name": "x"}', '../../etc/passwd': 'root' }, ''));
    await refused({ url: server.url('/escape.zip') }, 'url', /unsafe path: "..\/..\/etc\/passwd"/);
    server.set(
      '/escape.tgz',
      await tarGzArchive({ 'plugin.json': '{"name": "x"}' }, 'package/', [{ name: '/etc/cron.d/x' }]),
    );
    await refused({ url: server.url('/escape.tgz') }, 'url', /unsafe path: "\/etc\/cron.d\/x"/);
    server.set('/huge.zip', Buffer.alloc(200 * 1024, 1));
    await refused({ url: server.url('/huge.zip') }, 'url', /larger than the 65536 bytes allowed/);
    server.set(
      '/bomb.tgz',
      await tarGzArchive({ 'plugin.json': '{"name": "x"}', 'zeros.bin': new Uint8Array(1024 * 1024) }),
    );
    await refused(
      { url: server.url('/bomb.tgz') },
      'url',
      /"package\/zeros.bin" in the plugin archive is larger than the 65536 bytes allowed/,
    );
    server.set('/bomb.zip', zipArchive({ 'plugin.json': '{"name": "x"}', 'zeros.bin': new Uint8Array(1024 * 1024) }));
    await refused({ url: server.url('/bomb.zip') }, 'url', /larger than the 65536 bytes allowed/);
    await refused({ plugin_type: 'custom' }, 'url', /This field is required/);
    await refused({ url: 'ftp://example.com/x.zip' }, 'url', /Must be an http\(s\) url/);
    await refused({ url: 'file:../outside' }, 'url', /Could not load plugin.json/);
    await refused({ plugin_type: 'inline', url: 'inline://x' }, 'plugin_type', /cannot be installed/);
    await refused({ plugin_type: 'nope' }, 'plugin_type', /"nope" is not a valid choice/);
    await refused({ plugin_type: 'source', name: 'x'.repeat(201) }, 'name', /no more than 200/);
    await refused({ plugin_type: 'source', capabilities: 'x' }, 'capabilities', /Expected a dictionary/);
    t.equal(await count(), before, 'nothing was installed by refused requests');

    t.equal((await call(op(family, 'create'), { params: org(a), body: { plugin_type: 'source' } })).status, 401);
    const reader = await makeKey(db, a.user, ['plugin:read']);
    t.match(await create({ plugin_type: 'source' }, reader), {
      status: 403,
      body: { detail: "API key missing required scope 'plugin:write'" },
    });
    await setAccessLevel(db, a, 6);
    t.match(await create({ plugin_type: 'source', is_global: true }), {
      status: 403,
      body: { detail: "This organization can't manage global plugins!" },
    });
    t.equal((await create({ plugin_type: 'source', is_global: false })).status, 201, 'install level may install');
    await setAccessLevel(db, a, 3);
    t.match(await create({ plugin_type: 'source' }), { status: 403, body: { detail: ACCESS } });
  });

  await t.test(`${family}_retrieve`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const mine = await makePlugin(ctx, a, family);
    const get = (id: number | string, key = a.key) => call(op(family, 'retrieve'), { key, params: { ...org(a), id } });
    const res = await get(mine.id);
    t.equal(res.status, 200);
    t.same(res.body, mine);
    t.same(
      (await get((await makePlugin(ctx, b, family)).id)).body,
      NOT_FOUND,
      "another organization's plugin is a 404",
    );
    const global_ = await makePlugin(ctx, b, family, { is_global: true });
    t.match(await get(global_.id), { status: 200, body: { organization_id: b.organization.id } });
    t.equal((await get((await makePlugin(ctx, a, other)).id)).status, 404, 'a plugin of another family is a 404 here');
    t.equal((await call(op(other, 'retrieve'), { key: a.key, params: { ...org(a), id: mine.id } })).status, 404);
    t.equal((await get(999999)).status, 404);
    t.match(await get('abc'), { status: 400, body: { attr: 'id' } });
    t.equal((await call(op(family, 'retrieve'), { params: { ...org(a), id: mine.id } })).status, 401);
    t.equal((await get(mine.id, await makeKey(db, a.user, ['dashboard:read']))).status, 403);
    await setAccessLevel(db, a, 0);
    t.match(await get(mine.id), { status: 403, body: { detail: ACCESS } });
  });

  await t.test(`${family}_partial_update`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const mine = await makePlugin(ctx, a, family);
    const patch = (id: number | string, body: unknown, key = a.key) =>
      call(op(family, 'partial_update'), { key, params: { ...org(a), id }, body });
    const res = await patch(mine.id, {
      name: 'Renamed',
      icon: 'https://x/icon.png',
      url: 'https://ignored',
      organization_id: b.organization.id,
    });
    t.equal(res.status, 200);
    t.match(res.body, { name: 'Renamed', icon: 'https://x/icon.png', url: null, organization_id: a.organization.id });
    t.match(await patch(mine.id, { name: 'x'.repeat(201) }), { status: 400, body: { attr: 'name' } });
    t.match(await patch(mine.id, { is_global: 'yes' }), { status: 400, body: { attr: 'is_global' } });
    t.match(
      await patch(mine.id, { is_global: true }),
      { status: 200, body: { is_global: true } },
      'root may make it global',
    );
    const global_ = await makePlugin(ctx, b, family, { is_global: true });
    t.match(await patch(global_.id, { name: 'Mine now' }), { status: 403, body: { detail: MANAGED } });
    t.equal((await patch((await makePlugin(ctx, b, family)).id, { name: 'x' })).status, 404);
    t.equal((await patch((await makePlugin(ctx, a, other)).id, { name: 'x' })).status, 404, 'another family: 404');
    const moved = await patch(mine.id, { capabilities: CAPABILITIES[other] });
    t.same(moved.body.capabilities, CAPABILITIES[other]);
    t.equal(
      (await call(op(family, 'retrieve'), { key: a.key, params: { ...org(a), id: mine.id } })).status,
      404,
      'it left this family',
    );
    t.equal(
      (
        await call(op(other, 'partial_update'), {
          key: a.key,
          params: { ...org(a), id: mine.id },
          body: { capabilities: CAPABILITIES[family] },
        })
      ).status,
      200,
    );
    t.equal((await call(op(family, 'partial_update'), { params: { ...org(a), id: mine.id }, body: {} })).status, 401);
    t.equal((await patch(mine.id, { name: 'x' }, await makeKey(db, a.user, ['plugin:read']))).status, 403);
    await setAccessLevel(db, a, 6);
    t.match(await patch(mine.id, { is_global: false }), {
      status: 403,
      body: { detail: "This organization can't manage global plugins!" },
    });
    t.equal((await patch(mine.id, { description: 'install level may edit' })).status, 200);
    await setAccessLevel(db, a, 3);
    t.match(await patch(mine.id, { name: 'x' }), { status: 403, body: { detail: ACCESS } });
  });

  await t.test(`${family}_destroy`, async (t) => {
    const a = await makeTenant(db);
    const b = await makeTenant(db);
    const del = (id: number | string, key = a.key) => call(op(family, 'destroy'), { key, params: { ...org(a), id } });
    const mine = await makePlugin(ctx, a, family);
    t.equal((await del(mine.id)).status, 204);
    t.equal((await call(op(family, 'retrieve'), { key: a.key, params: { ...org(a), id: mine.id } })).status, 404);
    const global_ = await makePlugin(ctx, a, family, { is_global: true });
    t.match(await del(global_.id), {
      status: 400,
      body: { attr: null, detail: 'This plugin is marked as global! Make it local before uninstallation' },
    });
    await call(op(family, 'partial_update'), {
      key: a.key,
      params: { ...org(a), id: global_.id },
      body: { is_global: false },
    });
    t.equal((await del(global_.id)).status, 204, 'deletable once local');
    const theirs = await makePlugin(ctx, b, family, { is_global: true });
    t.match(await del(theirs.id), { status: 403, body: { detail: MANAGED } });
    t.equal((await del((await makePlugin(ctx, b, family)).id)).status, 404);
    const elsewhere = await makePlugin(ctx, a, other);
    t.equal((await del(elsewhere.id)).status, 404, 'another family: 404');
    t.match(await del('abc'), { status: 400, body: { attr: 'id' } });
    t.equal((await call(op(family, 'destroy'), { params: { ...org(a), id: elsewhere.id } })).status, 401);
    const keep = await makePlugin(ctx, a, family);
    t.equal((await del(keep.id, await makeKey(db, a.user, ['plugin:read']))).status, 403);
    await setAccessLevel(db, a, 3);
    t.match(await del(keep.id), { status: 403, body: { detail: ACCESS } });
    t.equal(
      (await call(op(family, 'retrieve'), { key: a.key, params: { ...org(a), id: keep.id } })).status,
      200,
      'still there',
    );
  });
}
