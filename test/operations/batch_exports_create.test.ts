import t from 'tap';
import { eq } from 'drizzle-orm';
import { batch_exports } from '../../src/db/schema/index.js';
import { makeKey, makeProject, makeTenant } from '../helpers/factories.js';
import { call, db, box, S3, body } from '../helpers/batch-exports-app.js';

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

t.test('a null model, which PostHog’s model field stores, is kept and counts as events', async (t) => {
  const a = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const http = { type: 'HTTP' as const, config: { url: 'https://example.com/batch/', token: 't' } };
  const made = await call('batch_exports_create', {
    key: a.key,
    params: org,
    body: body({ model: null, destination: http }),
  });
  t.equal(made.status, 201, 'an HTTP export takes it, as it takes only events');
  t.equal(made.body.model, null, 'answered as stored');
  const [stored] = await db.select().from(batch_exports).where(eq(batch_exports.id, made.body.id));
  t.equal(stored!.model, null);
  const left = await call('batch_exports_create', { key: a.key, params: org, body: body() });
  t.equal(left.body.model, 'events', 'left out of a create, it is events');
  const query = await call('batch_exports_partial_update', {
    key: a.key,
    params: { ...org, id: left.body.id },
    body: { model: null, hogql_query: 'SELECT event FROM events' },
  });
  t.match(query, { status: 200, body: { model: null } }, 'a HogQL query, for events only, is taken with it');
  const persons = await call('batch_exports_partial_update', {
    key: a.key,
    params: { ...org, id: left.body.id },
    body: { model: 'persons' },
  });
  t.match(persons, { status: 400, body: { attr: 'hogql_query' } }, 'the events-only rules still hold');
  const bad = await call('batch_exports_create', { key: a.key, params: org, body: body({ model: 'groups' as never }) });
  t.match(bad, { status: 400, body: { code: 'invalid_choice', attr: 'model' } });
});
