// A Postgres batch export aimed at the server's own database: with trust (or known) credentials its
// `hogql_query` could select constants under the column names of `personal_api_keys` and write a key
// of its own choosing, which then worked as the owner's. Refused on save and when the run connects,
// even where ALLOW_PRIVATE_NETWORKS allows the database's address (as the tests' default does).
import { eq } from 'drizzle-orm';
import t from 'tap';
import { batch_exports } from '../src/db/schema/index.js';
import { databaseTarget } from '../src/net/own-database.js';
import { hashKeyValue, newPersonalApiKeyValue } from '../src/tokens.js';
import { buildTestApp } from './helpers/app.js';
import { startWorker, waitFor } from './helpers/batch-exports.js';
import { insertEvents, spread } from './helpers/event-rows.js';
import { makeMember, makeTenant } from './helpers/factories.js';

const ctx = await buildTestApp(t);
// The embedded database listens on a Unix socket only, which no destination can name.
if (!databaseTarget(ctx.url)) {
  t.plan(0, 'the database is reached by no address a destination can name (a Unix socket)');
  process.exit(0);
}
const { call, db } = ctx;
await startWorker(ctx);

const OWN = "This is the server's own database: a batch export cannot write into it.";
const own = new URL(ctx.url);
const owner = await makeTenant(db);
// The attacker is a plain member of the owner's organization, with a key that may write batch exports.
const attacker = await makeMember(db, owner, 1, ['batch_export:write', 'batch_export:read']);
const HOUR = 3_600_000;
const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR);
const end = new Date(start.getTime() + HOUR);
await insertEvents(db, owner.project.id, spread(1, start, end));

// A key of the attacker's choosing, for the owner's user, with every scope.
const forged = newPersonalApiKeyValue();
const hogql =
  `SELECT 'forged' AS id, ${owner.user.id} AS user_id, 'forged' AS label, '${hashKeyValue(forged)}' AS secure_value, ` +
  `'phx_...' AS mask_value, '{*}' AS scopes FROM events`;
const destination = (host: string, database = own.pathname.slice(1)) => ({
  type: 'Postgres',
  config: {
    host,
    port: Number(own.port || 5432),
    database,
    user: decodeURIComponent(own.username),
    password: decodeURIComponent(own.password) || 'x',
    table_name: 'personal_api_keys',
  },
});
const P = { project_id: owner.project.id };
const create = (dest: object) =>
  call('projects_batch_exports_create', {
    key: attacker.key,
    params: P,
    body: { name: 'exfil', destination: dest, interval: 'hour', paused: true, hogql_query: hogql },
  });
const forgedWorks = async () => (await call('users_retrieve', { key: forged, params: { uuid: '@me' } })).status === 200;

t.test('refused on save, by address or by a name that resolves to it', async (t) => {
  for (const host of [own.hostname, 'localhost', '0177.0.0.1', '::ffff:127.0.0.1']) {
    const res = await create(destination(host));
    t.equal(res.status, 400, host);
    t.same(res.body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: OWN,
      attr: 'destination__config__host',
    });
  }
  // The same server's other databases are other tenants' business, not the server's.
  t.equal(
    (await create(destination(own.hostname, 'postgres'))).status,
    201,
    'another database on the same server is allowed',
  );
});

t.test('refused when the run connects, for an export saved another way', async (t) => {
  // Saved as another database, then changed underneath (an export from before this check, or a
  // name that resolved elsewhere when it was saved).
  const exp = await create(destination(own.hostname, 'postgres'));
  t.equal(exp.status, 201);
  await db
    .update(batch_exports)
    .set({ destination_config: destination(own.hostname).config })
    .where(eq(batch_exports.id, exp.body.id));
  const ids = { ...P, batch_export_id: exp.body.id };
  const backfill = await call('projects_batch_exports_backfills_create', {
    key: attacker.key,
    params: ids,
    body: { start_at: start.toISOString(), end_at: end.toISOString() },
  });
  t.equal(backfill.status, 201);
  await waitFor('the backfill to finish', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: attacker.key,
      params: { ...ids, id: backfill.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
  const [run] = (
    await call('projects_batch_exports_runs_list', { key: attacker.key, params: ids, query: { start: '-1d' } })
  ).body.results;
  t.match(run, { status: 'Failed', latest_error: OWN });
  t.notOk(await forgedWorks(), 'no key was written into the server’s database');
});
