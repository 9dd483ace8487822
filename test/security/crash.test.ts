// A hostile plugin archive must cost its sender a 400, never the process: reproduced against the
// server as `npm start` runs it, since only a separate process shows whether an error escaped.
import t from 'tap';
import { openTestDatabase } from '../helpers/db.js';
import { pluginJson, SOURCES, startFileServer, tarGzArchive, zipArchive } from '../helpers/plugins.js';
import { startServer } from '../helpers/server-process.js';

const KEY = 'phx_archivecrashkey0000000000000000000000000000000';

t.test('archives with unsafe or oversized entries leave the server serving', async (t) => {
  const files = await startFileServer(t);
  const main = SOURCES.pipeline_destinations;
  // The unsafe entry comes first and has content, so the tar stream is still reading it when refused.
  files.set(
    '/climb.tgz',
    await tarGzArchive({ '../x': 'x'.repeat(4096), 'plugin.json': pluginJson('Climb', '1.0.0'), 'index.ts': main }, ''),
  );
  files.set(
    '/big.tgz',
    await tarGzArchive({
      'plugin.json': pluginJson('Big', '1.0.0'),
      'index.ts': main,
      'big.bin': new Uint8Array(4 << 20),
    }),
  );
  files.set(
    '/big.zip',
    zipArchive({ 'plugin.json': pluginJson('Big', '1.0.0'), 'index.ts': main, 'big.bin': new Uint8Array(4 << 20) }),
  );
  files.set(
    '/truncated.tgz',
    (await tarGzArchive({ 'plugin.json': pluginJson('Cut', '1.0.0'), 'index.ts': main.repeat(200) })).subarray(0, 300),
  );

  const pg = await openTestDatabase();
  const server = startServer({
    BOOTSTRAP_API_KEY: KEY,
    RATE_LIMITS: 'off',
    WORKER: '0',
    PLUGIN_ARCHIVE_MAX_BYTES: String(1 << 20),
    // The archives are served on 127.0.0.1, which tenant-supplied addresses may not reach otherwise.
    ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
    DATABASE_URL: pg.url,
  });
  t.teardown(async () => {
    if (server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await pg.database.close();
    await pg.drop();
  });
  const base = await server.listening;
  const auth = { authorization: `Bearer ${KEY}` };
  const install = (path: string) =>
    fetch(`${base}/api/organizations/@current/pipeline_destinations/`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ plugin_type: 'custom', url: files.url(path) }),
    });

  const cases: [string, RegExp][] = [
    ['/climb.tgz', /unsafe path: "\.\.\/x"/],
    ['/big.tgz', /"package\/big\.bin" in the plugin archive is larger than the 1048576 bytes allowed/],
    ['/big.zip', /"plugin-main\/big\.bin" in the plugin archive is larger than the 1048576 bytes allowed/],
    ['/truncated.tgz', /not a valid (gzip|tar) file/],
  ];
  for (const [path, detail] of cases) {
    const res = await install(path);
    const body = (await res.json()) as { type: string; attr: string; detail: string };
    t.equal(res.status, 400, path);
    t.match(body, { type: 'validation_error', attr: 'url', detail }, path);
  }
  // Errors thrown out of a stream surface on a later turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 500));

  t.equal(server.child.exitCode, null, 'the server process is still running');
  t.equal((await fetch(`${base}/_health`)).status, 200, '/_health answers');
  const orgs = await fetch(`${base}/api/organizations/`, { headers: auth });
  t.equal(orgs.status, 200, 'an authenticated call answers');
  const { stdout, stderr } = server.output();
  t.notMatch(
    stdout + stderr,
    /uncaught exception|unhandled promise rejection/,
    'no error escaped to the process guard',
  );
});
