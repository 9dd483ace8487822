// A stored destination secret is never sent to a destination it was not entered for: changing where an
// export sends (or as whom it signs in) needs the secret again in the same request, one rule per type.
import t, { type Test } from 'tap';
import { eq } from 'drizzle-orm';
import { batch_exports } from '../src/db/schema/index.js';
import { buildTestApp } from './helpers/app.js';
import { makeTenant } from './helpers/factories.js';
import { insertEvents, spread } from './helpers/event-rows.js';
import { captureServer, startWorker, waitFor } from './helpers/batch-exports.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
await startWorker(ctx);
const a = await makeTenant(db);
const P = { project_id: a.project.id };

const HOUR = 3_600_000;
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR);
const at = (h: number) => new Date(base.getTime() + h * HOUR);
await insertEvents(db, a.project.id, [...spread(3, at(0), at(1)), ...spread(3, at(1), at(2))]);

async function create(destination: object): Promise<string> {
  const res = await call('projects_batch_exports_create', {
    key: a.key,
    params: P,
    body: { name: 'x', destination, interval: 'hour', paused: true },
  });
  if (res.status !== 201) throw new Error(res.raw);
  return res.body.id;
}

const patch = (id: string, config: Record<string, unknown>, type?: string) =>
  call('projects_batch_exports_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { destination: { ...(type ? { type } : {}), config } },
  });

const stored = async (id: string) =>
  (await db.select().from(batch_exports).where(eq(batch_exports.id, id)))[0]!.destination_config;

/** Each change must be refused on `secret` and leave the export as it was. */
async function refused(t: Test, id: string, secret: string, changes: Record<string, unknown>[]) {
  for (const change of changes) {
    const before = await stored(id);
    const res = await patch(id, change);
    t.match(
      res,
      { status: 400, body: { type: 'validation_error', code: 'required', attr: `destination__config__${secret}` } },
      JSON.stringify(change),
    );
    t.same(await stored(id), before, 'nothing changed');
  }
}

async function backfill(id: string, hour: number) {
  const made = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: { ...P, batch_export_id: id },
    body: { start_at: at(hour).toISOString(), end_at: at(hour + 1).toISOString() },
  });
  return waitFor('the backfill to finish', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, batch_export_id: id, id: made.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
}

t.test('HTTP: the token does not follow a new url', async (t) => {
  const owner = await captureServer(t);
  const attacker = await captureServer(t);
  const id = await create({ type: 'HTTP', config: { url: owner.url, token: 'phc_owners_token' } });

  await refused(t, id, 'token', [{ url: attacker.url }]);
  t.match(
    await patch(id, { url: attacker.url }, 'HTTP'),
    { status: 400, body: { attr: 'destination__config__token' } },
    'naming the same type changes nothing',
  );
  t.match(await backfill(id, 0), { status: 'Completed' });
  t.notOk(
    attacker.requests.some((r) => r.body.api_key === 'phc_owners_token'),
    "the owner's token never reached the other address",
  );
  t.ok(
    owner.requests.length > 0 && owner.requests.every((r) => r.body.api_key === 'phc_owners_token'),
    'the owner still receives, with the stored token',
  );
  t.equal(
    (await patch(id, { url: owner.url, exclude_events: ['$ignored'] })).status,
    200,
    'the same url and other settings keep the token',
  );
  t.same(
    Object.keys(
      (await call('projects_batch_exports_retrieve', { key: a.key, params: { ...P, id } })).body.destination.config,
    ).sort(),
    ['exclude_events', 'url'],
  );

  t.equal(
    (await patch(id, { url: attacker.url, token: 'phc_new_token' })).status,
    200,
    'a new url with its own token is fine',
  );
  t.match(await backfill(id, 1), { status: 'Completed' });
  t.ok(attacker.requests.length > 0, 'the new address receives');
  t.ok(
    attacker.requests.every((r) => r.body.api_key === 'phc_new_token'),
    'with the token sent for it, never the old one',
  );
  t.equal(owner.requests.length, 1, 'and the owner no longer does');
});

t.test('S3: the secret key does not follow a new endpoint or access key id', async (t) => {
  const id = await create({
    type: 'S3',
    config: {
      bucket_name: 'exports',
      region: 'us-east-1',
      endpoint_url: 'http://127.0.0.1:9/',
      aws_access_key_id: 'AKID',
      aws_secret_access_key: 's3-secret',
    },
  });
  await refused(t, id, 'aws_secret_access_key', [
    { endpoint_url: 'http://127.0.0.2:9/' },
    { endpoint_url: null },
    { aws_access_key_id: 'OTHER' },
  ]);
  const before = await stored(id);
  t.equal(
    (await patch(id, { prefix: 'p/', region: 'eu-west-1', bucket_name: 'other' })).status,
    200,
    'other settings keep the secret',
  );
  t.equal((await stored(id)).aws_secret_access_key, before.aws_secret_access_key);
  t.equal(
    (await patch(id, { endpoint_url: 'http://127.0.0.2:9/', aws_secret_access_key: 'other-secret' })).status,
    200,
  );
  t.not((await stored(id)).aws_secret_access_key, before.aws_secret_access_key);
  t.equal(
    (await patch(id, { endpoint_url: 'http://127.0.0.3:9/', aws_secret_access_key: null })).status,
    200,
    'or dropping it',
  );
  t.equal((await stored(id)).aws_secret_access_key, null);
  t.equal(
    (await patch(id, { endpoint_url: 'http://127.0.0.4:9/' })).status,
    200,
    'with no stored secret there is nothing to redirect',
  );
});

t.test('Postgres: the password does not follow a new host, port, database, user or certificate rule', async (t) => {
  const id = await create({
    type: 'Postgres',
    config: { host: '127.0.0.1', port: 5432, database: 'dest', user: 'exporter', password: 'pg-secret' },
  });
  await refused(t, id, 'password', [
    { host: '127.0.0.2' },
    { port: 6543 },
    { database: 'other' },
    { user: 'postgres' },
    { has_self_signed_cert: true },
  ]);
  const before = await stored(id);
  t.equal(
    (await patch(id, { schema: 'exports', table_name: 'ev', host: '127.0.0.1' })).status,
    200,
    'other settings keep the password',
  );
  t.equal((await stored(id)).password, before.password);
  t.equal((await patch(id, { host: '127.0.0.2', password: 'new-pg-secret' })).status, 200);
  t.not((await stored(id)).password, before.password);
});
