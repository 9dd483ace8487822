import t from 'tap';
import { eq } from 'drizzle-orm';
import { batch_export_backfills, batch_export_runs, batch_exports } from '../../src/db/schema/index.js';
import { insertLog } from '../../src/batch-exports/list-queries.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import { insertEvents } from '../helpers/event-rows.js';
import { secretBox } from '../../src/secrets/index.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const box = secretBox(ctx.app.config);

const S3 = {
  type: 'S3',
  config: {
    bucket_name: 'my-bucket',
    region: 'us-east-1',
    prefix: 'events/',
    aws_access_key_id: 'AKIDSECRET',
    aws_secret_access_key: 'very-secret',
    compression: 'gzip',
  },
};
const body = (extra: Record<string, unknown> = {}) => ({ name: 'To S3', destination: S3, interval: 'hour', ...extra });

t.test('batch_exports_create at organization scope', async (t) => {
  const a = await makeTenant(db);
  const second = await makeProject(db, a);
  const res = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: body(),
  });
  t.equal(res.status, 201);
  t.match(res.body, {
    name: 'To S3',
    model: 'events',
    interval: 'hour',
    paused: false,
    team_id: a.project.id,
    latest_runs: [],
    schema: null,
  });
  t.same(res.body.destination, {
    type: 'S3',
    config: { bucket_name: 'my-bucket', region: 'us-east-1', prefix: 'events/', compression: 'gzip' },
    integration: null,
  });
  t.notOk(res.raw.includes('very-secret') || res.raw.includes('AKIDSECRET'), 'secrets are never returned');
  const [stored] = await db.select().from(batch_exports).where(eq(batch_exports.id, res.body.id));
  t.match(stored!.destination_config.aws_secret_access_key, /^enc:v1:/, 'but they are stored, encrypted');
  t.equal(box.open(stored!.destination_config.aws_secret_access_key as string), 'very-secret');

  const named = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: '@current' },
    body: body({ team_id: second.id, model: 'persons', interval: 'every 5 minutes' }),
  });
  t.match(named.body, { team_id: second.id, model: 'persons', interval: 'every 5 minutes' });
  const b = await makeTenant(db);
  const foreign = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: body({ team_id: b.project.id }),
  });
  t.match(foreign, { status: 400, body: { attr: 'team_id', code: 'invalid_input' } });

  t.test('validation names the field', async (t) => {
    const org = { organization_id: a.organization.id };
    const cases: [Record<string, unknown>, string | null, RegExp | string][] = [
      [{ destination: S3, interval: 'hour' }, 'name', 'This field is required.'],
      [body({ interval: 'minute' }), 'interval', '"minute" is not a valid choice.'],
      [body({ model: 'sessionz' }), 'model', '"sessionz" is not a valid choice.'],
      [
        body({ model: 'sessions', destination: { type: 'HTTP', config: { url: 'http://127.0.0.1:9/', token: 't' } } }),
        null,
        'HTTP batch exports only support the events model',
      ],
      [
        body({ destination: { type: 'Snowflake', config: {} } }),
        'destination__type',
        '"Snowflake" is not a valid choice.',
      ],
      [
        body({ destination: { type: 'S3', config: { region: 'x' } } }),
        'destination__config__bucket_name',
        "Configuration missing required field: 'bucket_name'",
      ],
      [
        body({ destination: { type: 'S3', config: { ...S3.config, colour: 'red' } } }),
        'destination__config',
        "Configuration has unknown field/s: 'colour'",
      ],
      [
        body({ destination: { type: 'S3', config: { ...S3.config, file_format: 'Parquet' } } }),
        'destination__config__file_format',
        "File format Parquet is not supported. Supported file formats are ['JSONLines']",
      ],
      [
        body({ destination: { type: 'S3', config: { ...S3.config, compression: 'zstd' } } }),
        'destination__config__compression',
        "Compression zstd is not supported for file format JSONLines. Supported compressions are ['gzip', 'brotli']",
      ],
      [
        body({
          destination: { type: 'Postgres', config: { host: 'h', database: 'd', user: 'u', password: 'p', port: 'x' } },
        }),
        'destination__config__port',
        'A valid integer is required.',
      ],
      [
        body({ destination: { type: 'Postgres', config: { host: 'h', database: 'd', user: 'u' } } }),
        'destination__config__password',
        "Configuration missing required field: 'password'",
      ],
      [
        body({ destination: { type: 'HTTP', config: { url: 'not a url', token: 't' } } }),
        'destination__config__url',
        'Enter a valid URL.',
      ],
      [
        body({ destination: { type: 'HTTP', config: { url: 'http://x/batch/', token: 't' } }, model: 'persons' }),
        null,
        'HTTP batch exports only support the events model',
      ],
      [body({ start_at: 'yesterday' }), 'start_at', /Datetime has wrong format/],
      [
        body({ hogql_query: 'SELECT event FROM events UNION ALL SELECT event FROM events' }),
        'hogql_query',
        'UNIONs are not supported',
      ],
      [
        body({ hogql_query: 'SELECT event FROM events JOIN persons ON events.person_id = persons.id' }),
        'hogql_query',
        'JOINs are not supported',
      ],
      [body({ hogql_query: 'SELECT id FROM persons' }), 'hogql_query', 'Query must only SELECT FROM events'],
      [
        body({ hogql_query: 'SELECT event FROM events WHERE' }),
        'hogql_query',
        /^Failed to parse query: Syntax error at line 1, column 31: /,
      ],
      [
        body({ hogql_query: 'SELECT nope FROM events' }),
        'hogql_query',
        /^Invalid HogQL query: Unable to resolve field: nope\b/,
      ],
      [
        body({ hogql_query: 'SELECT event FROM events', model: 'persons' }),
        'hogql_query',
        /only be used with the events model/,
      ],
    ];
    for (const [payload, attr, detail] of cases) {
      const res = await call('batch_exports_create', { key: a.key, params: org, body: payload });
      t.equal(res.status, 400, JSON.stringify(payload).slice(0, 120));
      t.equal(res.body.attr, attr);
      if (typeof detail === 'string') t.equal(res.body.detail, detail);
      else t.match(res.body.detail, detail);
    }
    const list = await call('batch_exports_list', { key: a.key, params: org });
    t.equal(list.body.count, 2, 'nothing was created by the refused requests');
  });

  t.test('hogql_query compiles into the schema', async (t) => {
    const res = await call('batch_exports_create', {
      key: a.key,
      params: { organization_id: a.organization.id },
      body: body({
        hogql_query:
          "select event, properties.$browser as browser, properties['plan'] from events where properties.$browser = " +
          "'Chrome'",
      }),
    });
    t.equal(res.status, 201);
    t.same(res.body.schema, {
      fields: [
        { expression: 'event', alias: 'event' },
        { expression: 'properties.$browser', alias: 'browser' },
        { expression: 'properties.plan', alias: 'plan' },
      ],
      values: {},
      hogql_query:
        'SELECT event, properties.$browser AS browser, properties.plan FROM events WHERE properties.$browser = ' +
        "'Chrome'",
    });
    t.equal(
      res.body.hogql_query,
      res.body.schema.hogql_query,
      'hogql_query is returned as stored (normalised), as PostHog does',
    );
  });

  t.test('401, 403', async (t) => {
    t.equal(
      (await call('batch_exports_create', { params: { organization_id: a.organization.id }, body: body() })).status,
      401,
    );
    const reader = await makeKey(db, a.user, ['batch_export:read']);
    const denied = await call('batch_exports_create', {
      key: reader,
      params: { organization_id: a.organization.id },
      body: body(),
    });
    t.same(denied.body, {
      type: 'authentication_error',
      code: 'permission_denied',
      detail: "API key missing required scope 'batch_export:write'",
      attr: null,
    });
    const outsider = await makeTenant(db);
    const other = await call('batch_exports_create', {
      key: outsider.key,
      params: { organization_id: a.organization.id },
      body: body(),
    });
    t.equal(other.status, 403, 'a non-member is refused');
  });
});

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

t.test('pause and unpause are idempotent', async (t) => {
  const a = await makeTenant(db);
  const created = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: body(),
  });
  const params = { project_id: a.project.id, id: created.body.id };
  const paused = await call('projects_batch_exports_pause_create', { key: a.key, params });
  t.same([paused.status, paused.body], [200, { paused: true }]);
  const after = (await call('projects_batch_exports_retrieve', { key: a.key, params })).body;
  t.equal(after.paused, true);
  t.ok(after.last_paused_at, 'last_paused_at is set');
  await new Promise((r) => setTimeout(r, 20));
  t.same((await call('projects_batch_exports_pause_create', { key: a.key, params })).body, { paused: true });
  const again = (await call('projects_batch_exports_retrieve', { key: a.key, params })).body;
  t.equal(again.last_updated_at, after.last_updated_at, 'a second pause changes nothing');
  t.equal(again.last_paused_at, after.last_paused_at);
  t.same((await call('projects_batch_exports_unpause_create', { key: a.key, params })).body, { paused: false });
  const unpaused = (await call('projects_batch_exports_retrieve', { key: a.key, params })).body;
  t.equal(unpaused.paused, false);
  await new Promise((r) => setTimeout(r, 20));
  t.same((await call('projects_batch_exports_unpause_create', { key: a.key, params, body: { backfill: true } })).body, {
    paused: false,
  });
  t.equal(
    (await call('projects_batch_exports_retrieve', { key: a.key, params })).body.last_updated_at,
    unpaused.last_updated_at,
  );
  const none = await call('projects_batch_exports_backfills_list', {
    key: a.key,
    params: { project_id: a.project.id, batch_export_id: created.body.id },
  });
  t.same(none.body.results, [], 'unpausing a running export backfills nothing');

  t.test('unpause with backfill covers the paused gap', async (t) => {
    const pausedAt = new Date(Date.now() - 3 * 3_600_000);
    await db
      .update(batch_exports)
      .set({ paused: true, last_paused_at: pausedAt })
      .where(eq(batch_exports.id, created.body.id));
    await call('projects_batch_exports_unpause_create', { key: a.key, params, body: { backfill: true } });
    const list = await call('projects_batch_exports_backfills_list', {
      key: a.key,
      params: { project_id: a.project.id, batch_export_id: created.body.id },
    });
    t.equal(list.body.results.length, 1);
    const hour = 3_600_000;
    t.equal(list.body.results[0].start_at, pausedAt.toISOString());
    t.equal(list.body.results[0].end_at, new Date(Math.floor(Date.now() / hour) * hour).toISOString());
    t.equal(list.body.results[0].progress.total_runs, 3, 'one run per hour of the gap');
  });

  t.test('errors', async (t) => {
    const b = await makeTenant(db);
    t.equal(
      (
        await call('batch_exports_pause_create', {
          key: b.key,
          params: { organization_id: b.organization.id, id: created.body.id },
        })
      ).status,
      404,
    );
    const reader = await makeKey(db, a.user, ['batch_export:read']);
    t.equal((await call('projects_batch_exports_pause_create', { key: reader, params })).status, 403);
    t.equal((await call('projects_batch_exports_unpause_create', { params })).status, 401);
    const typed = await call('projects_batch_exports_unpause_create', {
      key: a.key,
      params,
      body: { backfill: 'true' },
    });
    t.match(typed.body, { attr: 'backfill' });
  });
});

t.test('backfill validation', async (t) => {
  const a = await makeTenant(db);
  const created = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: body({ interval: 'hour' }),
  });
  const params = { organization_id: a.organization.id, id: created.body.id };
  const noData = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-02T00:00:00Z' },
  });
  t.same(noData.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'There is no data to backfill for this model.',
    attr: null,
  });
  await insertEvents(db, a.project.id, [
    { timestamp: new Date('2024-03-01T10:20:00Z') },
    { timestamp: new Date('2024-03-01T12:10:00Z') },
  ]);
  const cases: [Record<string, unknown>, string][] = [
    [{ start_at: '2024-03-01T10:00:00', end_at: '2024-03-01T12:00:00Z' }, 'Input 2024-03-01T10:00:00 is naive.'],
    [{ start_at: 'soon', end_at: '2024-03-01T12:00:00Z' }, 'Input soon is not a valid ISO formatted datetime.'],
    [
      { start_at: '2024-03-01T12:00:00Z', end_at: '2024-03-01T11:00:00Z' },
      "The initial backfill datetime 'start_at' happens after 'end_at'",
    ],
    [
      { start_at: '2024-02-01T00:00:00Z', end_at: '2024-02-02T00:00:00Z' },
      'The provided backfill date range contains no data. The earliest possible backfill start date is 2024-03-01 ' +
        '10:00:00',
    ],
  ];
  for (const [payload, detail] of cases) {
    const res = await call('batch_exports_backfill_create', { key: a.key, params, body: payload });
    t.same([res.status, res.body.detail, res.body.attr], [400, detail, null]);
  }
  const future = new Date(Date.now() + 3 * 3_600_000).toISOString();
  const tooLate = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: '2024-03-01T10:00:00Z', end_at: future },
  });
  t.equal(tooLate.body.detail, `The provided 'end_at' (${future}) is in the future`);

  const ok = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: '2024-02-01T00:00:00+02:00', end_at: '2024-03-01T12:30:00Z' },
  });
  t.equal(ok.status, 200);
  t.match(ok.body, { backfill_id: /^[0-9a-f-]{36}$/ });
  const backfill = await call('batch_exports_backfills_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: created.body.id, id: ok.body.backfill_id },
  });
  t.match(backfill.body, {
    status: 'Running',
    start_at: '2024-01-31T22:00:00.000Z',
    adjusted_start_at: '2024-03-01T10:00:00.000Z',
    end_at: '2024-03-01T12:30:00.000Z',
    progress: { total_runs: 3, finished_runs: 0, progress: 0 },
    team: a.project.id,
    batch_export: created.body.id,
  });
  const runs = await call('batch_exports_runs_list', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: created.body.id },
    query: { ordering: 'data_interval_start', start: '2024-01-01T00:00:00Z' },
  });
  t.same(
    runs.body.results.map((r: { data_interval_start: string; data_interval_end: string; status: string }) => [
      r.data_interval_start,
      r.data_interval_end,
      r.status,
    ]),
    [
      ['2024-03-01T10:00:00.000Z', '2024-03-01T11:00:00.000Z', 'Starting'],
      ['2024-03-01T11:00:00.000Z', '2024-03-01T12:00:00.000Z', 'Starting'],
      ['2024-03-01T12:00:00.000Z', '2024-03-01T13:00:00.000Z', 'Starting'],
    ],
    'one run per hour, aligned to the grid',
  );
  const whole = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { end_at: '2024-03-01T11:00:00Z' },
  });
  const single = await call('batch_exports_backfills_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: created.body.id, id: whole.body.backfill_id },
  });
  t.match(
    single.body,
    { start_at: null, progress: { total_runs: 1 } },
    'no start_at: everything before end_at in one run',
  );
  t.equal(
    (
      await call('batch_exports_backfill_create', {
        key: a.key,
        params: { ...params, id: '00000000-0000-0000-0000-000000000000' },
        body: {},
      })
    ).status,
    404,
  );
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
