import t from 'tap';
import { eq } from 'drizzle-orm';
import { batch_export_backfills, batch_export_runs, batch_exports } from '../../src/db/schema/index.js';
import { insertLog } from '../../src/batch-exports/list-queries.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import { insertEvents } from '../helpers/event-rows.js';
import { call, db, box, body } from '../helpers/batch-exports-app.js';

t.test('list and retrieve at both scopes', async (t) => {
  const a = await makeTenant(db);
  const other = await makeProject(db, a);
  const first = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: body({ name: 'first' }),
  });
  t.equal(first.status, 201);
  t.equal(first.body.team_id, a.project.id);
  const second = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: other.id },
    body: body({ name: 'second', team_id: a.project.id }),
  });
  t.equal(second.body.team_id, other.id, 'at project scope the path decides the project');
  const orgList = await call('batch_exports_list', { key: a.key, params: { organization_id: a.organization.id } });
  t.same(
    orgList.body.results.map((e: { name: string }) => e.name),
    ['second', 'first'],
    'the organization sees every project, newest first',
  );
  const projectList = await call('projects_batch_exports_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { limit: 1 },
  });
  t.match(projectList.body, { count: 1, next: null, results: [{ name: 'first' }] });
  const got = await call('projects_batch_exports_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: first.body.id },
  });
  t.equal(got.body.id, first.body.id);
  const wrongProject = await call('projects_batch_exports_retrieve', {
    key: a.key,
    params: { project_id: other.id, id: first.body.id },
  });
  t.equal(wrongProject.status, 404, "another project's export is not found there");
  const viaOrg = await call('batch_exports_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, id: second.body.id },
  });
  t.equal(viaOrg.body.name, 'second');

  const b = await makeTenant(db);
  const theirs = await call('batch_exports_retrieve', {
    key: b.key,
    params: { organization_id: b.organization.id, id: first.body.id },
  });
  t.same(
    theirs.body,
    { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null },
    "another organization's export is a 404",
  );
  t.equal(
    (
      await call('batch_exports_retrieve', {
        key: b.key,
        params: { organization_id: a.organization.id, id: first.body.id },
      })
    ).status,
    403,
  );
  t.equal(
    (
      await call('projects_batch_exports_retrieve', {
        key: b.key,
        params: { project_id: a.project.id, id: first.body.id },
      })
    ).status,
    403,
  );
  t.equal(
    (await call('batch_exports_retrieve', { key: a.key, params: { organization_id: a.organization.id, id: 'nope' } }))
      .status,
    404,
  );
  t.equal((await call('batch_exports_list', { params: { organization_id: a.organization.id } })).status, 401);
  const noScope = await makeKey(db, a.user, ['dashboard:read']);
  t.equal(
    (await call('projects_batch_exports_list', { key: noScope, params: { project_id: a.project.id } })).status,
    403,
  );
  const member = await makeMember(db, a, 1, ['batch_export:read']);
  t.equal(
    (await call('batch_exports_list', { key: member.key, params: { organization_id: a.organization.id } })).body.count,
    2,
  );
});

t.test('batch_exports_partial_update merges the destination config', async (t) => {
  const a = await makeTenant(db);
  const created = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: body(),
  });
  const params = { organization_id: a.organization.id, id: created.body.id };
  const res = await call('batch_exports_partial_update', {
    key: a.key,
    params,
    body: { name: 'Renamed', destination: { config: { prefix: 'new/' } }, id: 'ignored', team_id: 999 },
  });
  t.equal(res.status, 200);
  t.match(res.body, { id: created.body.id, name: 'Renamed', team_id: a.project.id });
  t.same(res.body.destination.config, {
    bucket_name: 'my-bucket',
    region: 'us-east-1',
    prefix: 'new/',
    compression: 'gzip',
  });
  const [stored] = await db.select().from(batch_exports).where(eq(batch_exports.id, created.body.id));
  t.equal(
    box.open(stored!.destination_config.aws_secret_access_key as string),
    'very-secret',
    'the secret left out of the PATCH is kept',
  );

  const bad = await call('batch_exports_partial_update', {
    key: a.key,
    params,
    body: { destination: { config: { compression: 'lz4' } } },
  });
  t.match(bad, { status: 400, body: { attr: 'destination__config__compression' } });
  const retyped = await call('batch_exports_partial_update', {
    key: a.key,
    params,
    body: { destination: { type: 'HTTP', config: { url: 'https://example.com/batch/' } } },
  });
  t.match(retyped.body, {
    attr: 'destination__config__token',
    detail: "Configuration missing required field: 'token'",
  });
  const hog = await call('batch_exports_partial_update', {
    key: a.key,
    params,
    body: { hogql_query: 'SELECT uuid, event FROM events' },
  });
  t.same(
    hog.body.schema.fields.map((f: { alias: string }) => f.alias),
    ['uuid', 'event'],
  );
  const cleared = await call('batch_exports_partial_update', { key: a.key, params, body: { hogql_query: '' } });
  t.equal(cleared.body.schema, null);
  const typed = await call('batch_exports_partial_update', { key: a.key, params, body: { paused: 'yes' } });
  t.match(typed.body, { attr: 'paused', detail: 'Must be a valid boolean.' });
  const b = await makeTenant(db);
  t.equal(
    (
      await call('batch_exports_partial_update', {
        key: b.key,
        params: { organization_id: b.organization.id, id: created.body.id },
        body: {},
      })
    ).status,
    404,
  );
  const reader = await makeKey(db, a.user, ['batch_export:read']);
  t.equal((await call('batch_exports_partial_update', { key: reader, params, body: {} })).status, 403);
});

t.test('batch_exports_destroy and logs', async (t) => {
  const a = await makeTenant(db);
  const created = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: body(),
  });
  const params = { organization_id: a.organization.id, id: created.body.id };
  const base = { project_id: a.project.id, batch_export_id: created.body.id };
  await insertLog(db, { ...base, instance_id: 'run-1', level: 'INFO', message: 'Batch export run started' });
  await insertLog(db, { ...base, instance_id: 'run-1', level: 'ERROR', message: 'Bucket vanished' });
  await insertLog(db, { ...base, instance_id: 'run-2', level: 'WARNING', message: 'Slow destination' });
  const all = await call('batch_exports_logs_retrieve', { key: a.key, params });
  t.equal(all.body.count, 3);
  t.same(
    all.body.results.map((l: { message: string }) => l.message),
    ['Slow destination', 'Bucket vanished', 'Batch export run started'],
    'newest first',
  );
  t.match(all.body.results[0], {
    log_source_id: created.body.id,
    instance_id: 'run-2',
    level: 'WARNING',
    timestamp: /Z$/,
  });
  const levels = await call('batch_exports_logs_retrieve', { key: a.key, params, query: { level: 'error,warning' } });
  t.equal(levels.body.count, 2);
  t.equal(
    (await call('batch_exports_logs_retrieve', { key: a.key, params, query: { search: 'BUCKET' } })).body.count,
    1,
  );
  t.equal(
    (await call('batch_exports_logs_retrieve', { key: a.key, params, query: { instance_id: 'run-1' } })).body.count,
    2,
  );
  const paged = await call('batch_exports_logs_retrieve', { key: a.key, params, query: { limit: 1 } });
  t.match(paged.body, { count: 3, results: [{ message: 'Slow destination' }] });
  t.ok(paged.body.next.includes('offset=1'));
  const future = await call('batch_exports_logs_retrieve', {
    key: a.key,
    params,
    query: { after: new Date(Date.now() + 60_000).toISOString() },
  });
  t.equal(future.body.count, 0);
  const tooMany = await call('batch_exports_logs_retrieve', { key: a.key, params, query: { limit: 501 } });
  t.match(tooMany.body, { attr: 'limit', detail: 'Ensure this value is less than or equal to 500.' });

  const hour = 3_600_000;
  const t0 = Math.floor(Date.now() / hour) * hour - 20 * hour;
  await db.insert(batch_export_runs).values(
    Array.from({ length: 12 }, (_, i) => ({
      batch_export_id: created.body.id,
      status: i < 11 ? 'Completed' : 'Starting',
      data_interval_start: new Date(t0 + i * hour),
      data_interval_end: new Date(t0 + (i + 1) * hour),
      created_at: new Date(t0 + (i + 1) * hour),
    })),
  );
  const withRuns = await call('batch_exports_retrieve', { key: a.key, params });
  t.equal(withRuns.body.latest_runs.length, 10, 'latest_runs holds the 10 newest');
  t.equal(withRuns.body.latest_runs[0].data_interval_end, new Date(t0 + 12 * hour).toISOString(), 'newest first');
  await insertEvents(db, a.project.id, [{ timestamp: new Date(t0) }]);
  const backfill = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: new Date(t0).toISOString(), end_at: new Date(t0 + 2 * hour).toISOString() },
  });

  const b = await makeTenant(db);
  t.equal(
    (
      await call('batch_exports_destroy', {
        key: b.key,
        params: { organization_id: b.organization.id, id: created.body.id },
      })
    ).status,
    404,
  );
  const reader = await makeKey(db, a.user, ['batch_export:read']);
  t.equal((await call('batch_exports_destroy', { key: reader, params })).status, 403);
  const gone = await call('batch_exports_destroy', { key: a.key, params });
  t.same([gone.status, gone.raw], [204, '']);
  t.equal((await call('batch_exports_retrieve', { key: a.key, params })).status, 404);
  t.equal(
    (await call('batch_exports_list', { key: a.key, params: { organization_id: a.organization.id } })).body.count,
    0,
    'deleted exports are not listed',
  );
  const [stopped] = await db
    .select()
    .from(batch_export_backfills)
    .where(eq(batch_export_backfills.id, backfill.body.backfill_id));
  t.equal(stopped!.status, 'Cancelled', 'its backfill is cancelled');
  const left = await db.select().from(batch_export_runs).where(eq(batch_export_runs.batch_export_id, created.body.id));
  t.same([...new Set(left.map((r) => r.status))].sort(), ['Cancelled', 'Completed'], 'and its unfinished runs');
});
