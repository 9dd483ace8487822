// PLUGIN_ARCHIVE_MAX_BYTES bounds every unpacked file and all of them together, for tarballs as for
// zips, however small the download: a few hundred kilobytes of gzip can hold hundreds of megabytes.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { pluginJson, SOURCES, startFileServer, tarGzArchive, zipArchive } from '../helpers/plugins.js';

const MAX = 20 * 1024 * 1024;

t.test('unpacked size is limited per file and in total, for both archive formats', async (t) => {
  const server = await startFileServer(t);
  const ctx = await buildTestApp(t, { pluginArchiveMaxBytes: MAX });
  const tenant = await makeTenant(ctx.db);
  const organization_id = tenant.organization.id;
  const install = (path: string) =>
    ctx.call('pipeline_destinations_create', {
      key: tenant.key,
      params: { organization_id },
      body: { plugin_type: 'custom', url: server.url(path) },
    });
  const count = async () =>
    (await ctx.call('pipeline_destinations_list', { key: tenant.key, params: { organization_id } })).body
      .count as number;
  const base = { 'plugin.json': pluginJson('Sized', '1.0.0'), 'index.ts': SOURCES.pipeline_destinations };

  // The reported case: a 150 MB file in a tarball of about 150 KB.
  const huge = { ...base, 'data.bin': new Uint8Array(150 * 1024 * 1024) };
  const hugeTgz = await tarGzArchive(huge);
  t.ok(hugeTgz.length < 200 * 1024, `the tarball is small (${hugeTgz.length} bytes)`);
  server.set('/huge.tgz', hugeTgz);
  server.set('/huge.zip', zipArchive({ ...base, 'data.bin': new Uint8Array(30 * 1024 * 1024) }));
  // Three files of 8 MiB: each is allowed, together they are not.
  const many = {
    ...base,
    'a.bin': new Uint8Array(8 << 20),
    'b.bin': new Uint8Array(8 << 20),
    'c.bin': new Uint8Array(8 << 20),
  };
  server.set('/many.tgz', await tarGzArchive(many));
  server.set('/many.zip', zipArchive(many));

  const before = await count();
  const cases: [string, string][] = [
    ['/huge.tgz', `"package/data.bin" in the plugin archive is larger than the ${MAX} bytes allowed.`],
    ['/huge.zip', `"plugin-main/data.bin" in the plugin archive is larger than the ${MAX} bytes allowed.`],
    ['/many.tgz', `The plugin archive unpacks to more than ${MAX} bytes.`],
    ['/many.zip', `The plugin archive unpacks to more than ${MAX} bytes.`],
  ];
  for (const [path, detail] of cases) {
    t.match(
      await install(path),
      { status: 400, body: { type: 'validation_error', code: 'invalid_input', attr: 'url', detail } },
      path,
    );
  }
  t.equal(await count(), before, 'nothing was installed');

  // Just inside both limits installs, and its source reads back.
  const fits = { ...base, 'a.bin': new Uint8Array(8 << 20), 'b.bin': new Uint8Array(8 << 20) };
  server.set('/fits.tgz', await tarGzArchive(fits));
  server.set('/fits.zip', zipArchive(fits));
  for (const path of ['/fits.tgz', '/fits.zip']) {
    const res = await install(path);
    t.equal(res.status, 201, `${path}: ${res.raw.slice(0, 200)}`);
    const source = await ctx.call('pipeline_destinations_source_retrieve', {
      key: tenant.key,
      params: { organization_id, id: res.body.id },
    });
    t.same(Object.keys(source.body).sort(), ['index.ts', 'plugin.json'], 'only the plugin files are kept');
  }
});
