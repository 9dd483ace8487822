// Destination and plugin secrets are stored encrypted (AES-256-GCM) with ENCRYPTION_KEY, or a key
// generated into the data folder: the raw tables hold no secret, values stored in plain text before
// still work and are encrypted by the start-up pass, and a wrong key fails runs with a clear message.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../src/db/client.js';
import { batch_exports, plugin_configs } from '../src/db/schema/index.js';
import { rowsOf } from '../src/db/queries/util.js';
import { prepareSecretBox, SecretBox, secretBox } from '../src/secrets/index.js';
import { loadKey, parseKey } from '../src/secrets/key.js';
import { sealStoredSecrets } from '../src/stored-secrets/seal.js';
import { buildTestApp, type TestContext } from './helpers/app.js';
import { makeTenant, type Tenant } from './helpers/factories.js';
import { insertEvents, spread } from './helpers/event-rows.js';
import { captureServer, startWorker, waitFor } from './helpers/batch-exports.js';
import { CONFIG_SCHEMA, makePlugin, SECRET } from './helpers/plugins.js';

const HOUR = 3_600_000;
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR);
const at = (h: number) => new Date(base.getTime() + h * HOUR);

const SECRETS = [
  'phc_http_token_at_rest',
  'AKID_AT_REST',
  's3_secret_at_rest',
  'pg_user_at_rest',
  'pg_password_at_rest',
  'plugin_secret_at_rest',
];

/** Every row of the tables that hold secrets, and the logs, as JSON text. */
async function rawText(db: Db): Promise<string> {
  const tables = ['batch_exports', 'plugin_configs', 'plugin_activity_logs', 'batch_export_logs', 'batch_export_runs'];
  const parts = await Promise.all(
    tables.map(async (name) =>
      rowsOf<{ row: string }>(await db.execute(sql.raw(`select row_to_json(x)::text as row from ${name} x`))).map(
        (r) => r.row,
      ),
    ),
  );
  return parts.flat().join('\n');
}

async function world(ctx: TestContext) {
  const a = await makeTenant(ctx.db);
  await insertEvents(ctx.db, a.project.id, [
    ...spread(2, at(0), at(1)),
    ...spread(2, at(1), at(2)),
    ...spread(2, at(2), at(3)),
  ]);
  return a;
}

async function createExport(ctx: TestContext, a: Tenant, destination: object): Promise<string> {
  const res = await ctx.call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 'x', destination, interval: 'hour', paused: true },
  });
  if (res.status !== 201) throw new Error(res.raw);
  return res.body.id;
}

async function backfill(ctx: TestContext, a: Tenant, id: string, hour: number) {
  const P = { project_id: a.project.id, batch_export_id: id };
  const made = await ctx.call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: at(hour).toISOString(), end_at: at(hour + 1).toISOString() },
  });
  await waitFor('the backfill to finish', async () => {
    const b = await ctx.call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: made.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
  const runs = await ctx.call('projects_batch_exports_runs_list', {
    key: a.key,
    params: P,
    query: { ordering: '-data_interval_start', start: '-1d' },
  });
  return runs.body.results[0];
}

t.test('the raw tables hold no secret; the export still sends it', async (t) => {
  const ctx = await buildTestApp(t);
  await startWorker(ctx);
  const a = await world(ctx);
  const target = await captureServer(t);
  const http = await createExport(ctx, a, { type: 'HTTP', config: { url: target.url, token: SECRETS[0] } });
  await createExport(ctx, a, {
    type: 'S3',
    config: {
      bucket_name: 'exports',
      region: 'us-east-1',
      aws_access_key_id: SECRETS[1],
      aws_secret_access_key: SECRETS[2],
    },
  });
  const pg = await createExport(ctx, a, {
    type: 'Postgres',
    config: { host: '127.0.0.1', database: 'd', user: SECRETS[3], password: 'first' },
  });
  t.equal(
    (
      await ctx.call('projects_batch_exports_partial_update', {
        key: a.key,
        params: { project_id: a.project.id, id: pg },
        body: { destination: { config: { password: SECRETS[4] } } },
      })
    ).status,
    200,
  );
  const plugin = await makePlugin(ctx, a, 'pipeline_destinations', { config_schema: CONFIG_SCHEMA });
  const made = await ctx.call('plugin_configs_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { plugin: plugin.id, order: 1, config: { host: 'h', apiKey: 'first' } },
  });
  await ctx.call('plugin_configs_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: made.body.id },
    body: { config: { host: 'h', apiKey: SECRETS[5] } },
  });

  const raw = await rawText(ctx.db);
  t.ok(raw.includes(target.url) && raw.includes('exports'), 'the rows were read');
  for (const secret of [...SECRETS, 'first']) t.notOk(raw.includes(secret), `${secret} is not stored in plain text`);
  const [row] = await ctx.db.select().from(batch_exports).where(eq(batch_exports.id, http));
  t.match(row!.destination_config.token, /^enc:v1:[A-Za-z0-9+/=]+$/, 'the versioned format');

  t.match(await backfill(ctx, a, http, 0), { status: 'Completed' });
  t.ok(
    target.requests.length > 0 && target.requests.every((r) => r.body.api_key === SECRETS[0]),
    'the run decrypted the token',
  );
});

t.test(
  'secrets stored in plain text before still work, and are encrypted at start-up or on the next write',
  async (t) => {
    const ctx = await buildTestApp(t);
    await startWorker(ctx);
    const a = await world(ctx);
    const target = await captureServer(t);
    const box = secretBox(ctx.app.config);
    const id = await createExport(ctx, a, { type: 'HTTP', config: { url: target.url, token: 'replaced' } });
    const other = await createExport(ctx, a, { type: 'HTTP', config: { url: target.url, token: 'replaced' } });
    const plain = { url: target.url, token: 'phc_legacy_plain' };
    await ctx.db.update(batch_exports).set({ destination_config: plain }).where(eq(batch_exports.id, id));
    await ctx.db
      .update(batch_exports)
      .set({ destination_config: { ...plain, token: 'phc_legacy_other' } })
      .where(eq(batch_exports.id, other));
    const plugin = await makePlugin(ctx, a, 'pipeline_destinations', { config_schema: CONFIG_SCHEMA });
    const made = await ctx.call('plugin_configs_create', {
      key: a.key,
      params: { project_id: a.project.id },
      body: { plugin: plugin.id, order: 1, config: { host: 'h' } },
    });
    await ctx.db
      .update(plugin_configs)
      .set({ config: { host: 'h', apiKey: 'legacy_plugin_secret' } })
      .where(eq(plugin_configs.id, made.body.id));

    const read = await ctx.call('plugin_configs_retrieve', {
      key: a.key,
      params: { project_id: a.project.id, id: made.body.id },
    });
    t.same(read.body.config, { host: 'h', apiKey: SECRET }, 'a plain secret is masked on reads');
    t.match(await backfill(ctx, a, id, 0), { status: 'Completed' });
    t.ok(
      target.requests.every((r) => r.body.api_key === 'phc_legacy_plain'),
      'a plain token is used as it is',
    );

    t.same(await sealStoredSecrets(ctx.db, box), { exports: 2, pluginConfigs: 1 });
    const raw = await rawText(ctx.db);
    for (const secret of ['phc_legacy_plain', 'phc_legacy_other', 'legacy_plugin_secret'])
      t.notOk(raw.includes(secret), `${secret} is encrypted`);
    t.same(await sealStoredSecrets(ctx.db, box), { exports: 0, pluginConfigs: 0 }, 'a second pass has nothing to do');
    const [pc] = await ctx.db.select().from(plugin_configs).where(eq(plugin_configs.id, made.body.id));
    t.same(pc!.config, { host: 'h' });
    t.equal(JSON.parse(box.open(pc!.secrets.apiKey!)), 'legacy_plugin_secret', 'the plugin secret moved, encrypted');
    t.same(
      (
        await ctx.call('plugin_configs_retrieve', {
          key: a.key,
          params: { project_id: a.project.id, id: made.body.id },
        })
      ).body.config,
      { host: 'h', apiKey: SECRET },
    );

    target.requests.length = 0;
    t.match(await backfill(ctx, a, id, 1), { status: 'Completed' });
    t.ok(
      target.requests.length > 0 && target.requests.every((r) => r.body.api_key === 'phc_legacy_plain'),
      'the encrypted token is the same token',
    );

    // Written again without the pass: a PATCH of the destination encrypts what it keeps.
    const third = await createExport(ctx, a, { type: 'HTTP', config: { url: target.url, token: 'replaced' } });
    await ctx.db
      .update(batch_exports)
      .set({ destination_config: { ...plain, token: 'phc_legacy_third' } })
      .where(eq(batch_exports.id, third));
    const patched = await ctx.call('projects_batch_exports_partial_update', {
      key: a.key,
      params: { project_id: a.project.id, id: third },
      body: { destination: { config: { include_events: ['$pageview'] } } },
    });
    t.equal(patched.status, 200);
    t.notOk((await rawText(ctx.db)).includes('phc_legacy_third'));
  },
);

t.test('a run whose secrets were written with another key fails with a clear message', async (t) => {
  const ctx = await buildTestApp(t, { encryptionKey: randomBytes(32).toString('base64') });
  await startWorker(ctx, { secrets: new SecretBox(randomBytes(32)), retryLimit: 0 });
  const a = await world(ctx);
  const target = await captureServer(t);
  const id = await createExport(ctx, a, { type: 'HTTP', config: { url: target.url, token: 'phc_other_key' } });
  const run = await backfill(ctx, a, id, 0);
  t.match(run, { status: 'Failed', latest_error: /could not be decrypted.*ENCRYPTION_KEY/ });
  t.equal(target.requests.length, 0, 'nothing was sent');
  t.equal(
    (await ctx.call('projects_batch_exports_retrieve', { key: a.key, params: { project_id: a.project.id, id } }))
      .status,
    200,
    'reads still work',
  );
});

t.test('without ENCRYPTION_KEY the key is generated into the data folder and reused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'secrets-key-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ctx = await buildTestApp(t, { dataDir: dir, encryptionKey: undefined });
  const a = await world(ctx);
  const id = await createExport(ctx, a, {
    type: 'HTTP',
    config: { url: 'http://127.0.0.1:9/', token: 'phc_generated_key' },
  });
  const file = join(dir, 'encryption.key');
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only');
  const key = parseKey(readFileSync(file, 'utf8'), 'the file');
  const [row] = await ctx.db.select().from(batch_exports).where(eq(batch_exports.id, id));
  t.equal(
    new SecretBox(key).open(row!.destination_config.token as string),
    'phc_generated_key',
    'the stored token is sealed with it',
  );
  t.match(
    loadKey({ encryptionKey: undefined, dataDir: dir }),
    { source: 'file', key },
    'the next start reads the same key',
  );

  const fresh = mkdtempSync(join(tmpdir(), 'secrets-key-'));
  t.teardown(() => rmSync(fresh, { recursive: true, force: true }));
  const warnings: string[] = [];
  prepareSecretBox({ encryptionKey: undefined, dataDir: fresh, databaseUrl: 'postgres://db.example/x' }, (m) =>
    warnings.push(m),
  );
  t.match(
    warnings,
    [/Generated an encryption key/, /ENCRYPTION_KEY is not set.*same key/],
    'several processes on one database are warned',
  );
  const quiet: string[] = [];
  prepareSecretBox(
    { encryptionKey: key.toString('hex'), dataDir: fresh, databaseUrl: 'postgres://db.example/x' },
    (m) => quiet.push(m),
  );
  t.same(quiet, [], 'no warning with ENCRYPTION_KEY set');
});

t.test('ENCRYPTION_KEY is 32 bytes as base64 or hex', async (t) => {
  const key = randomBytes(32);
  t.same(parseKey(key.toString('hex'), 'ENCRYPTION_KEY'), key);
  t.same(parseKey(key.toString('base64'), 'ENCRYPTION_KEY'), key);
  t.same(parseKey(key.toString('base64url'), 'ENCRYPTION_KEY'), key);
  for (const bad of [
    'short',
    randomBytes(16).toString('base64'),
    randomBytes(33).toString('hex'),
    'not base64 at all!',
  ]) {
    t.throws(
      () => parseKey(bad, 'ENCRYPTION_KEY'),
      /ENCRYPTION_KEY must be 32 bytes written as base64 or as 64 hex digits/,
    );
  }
  const box = new SecretBox(key);
  const sealed = box.seal('x');
  t.not(box.seal('x'), sealed, 'a fresh IV each time');
  t.throws(() => new SecretBox(randomBytes(32)).open(sealed), /could not be decrypted/);
  t.throws(() => box.open(`${sealed.slice(0, -4)}AAAA`), /could not be decrypted/, 'an altered value is refused');
});
