// The events listing's HogQL `select` and `where`, as PostHog's schema types them (repeated, or one JSON array),
// on PostHog's parser and the Query API's compiler.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { capture, iso } from '../helpers/events.js';
import { insertEvents } from '../helpers/event-rows.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const T0 = Date.parse('2024-06-01T12:00:00Z');
const a = await makeTenant(db);
const b = await makeTenant(db);
const uuid = randomUUID();
await capture(ctx, a.project.api_token, [
  { event: 'first', distinct_id: 'u1', timestamp: iso(T0), uuid, properties: { $browser: 'Chrome' } },
  { event: 'second', distinct_id: 'u2', timestamp: iso(T0 + 1000) },
]);
await capture(ctx, b.project.api_token, [{ event: 'secret', distinct_id: 'b1', timestamp: iso(T0 + 5000) }]);
const params = { project_id: a.project.id };

t.test('select and where', async (t) => {
  const csvOf = async (query: Record<string, string | string[]>) => {
    const res = await call('events_list', { key: a.key, params, query: { format: 'csv', ...query } });
    t.equal(res.status, 200, JSON.stringify(query));
    return res.raw;
  };
  t.equal(
    await csvOf({ select: JSON.stringify(['event', 'properties.$browser', 'distinct_id', "'x'"]) }),
    "event,properties.$browser,distinct_id,'x'\r\nsecond,,u2,x\r\nfirst,Chrome,u1,x\r\n",
    'select names the CSV columns (one JSON array)',
  );
  t.equal(
    await csvOf({ select: ['upper(event)', "concat(distinct_id, '!')"] }),
    'upper(event),"concat(distinct_id, \'!\')"\r\nSECOND,u2!\r\nFIRST,u1!\r\n',
    "repeated, as a client generated from PostHog's schema sends them, and any per-event expression",
  );
  t.equal(
    await csvOf({ select: ['event', "[distinct_id, 'z']", 'true'] }),
    `event,"[distinct_id, 'z'].0","[distinct_id, 'z'].1",true\r\nsecond,u2,z,True\r\nfirst,u1,z,True\r\n`,
    "a list opens into numbered columns in the selected column's place, a boolean is written as Python does",
  );
  const json = await call('events_list', { key: a.key, params, query: { select: ['event'] } });
  t.same(
    json.body.results.map((e: any) => [e.event, e.distinct_id]),
    [
      ['second', 'u2'],
      ['first', 'u1'],
    ],
    "the JSON answer is events whatever select says, as PostHog's",
  );
  const where = await call('events_list', {
    key: a.key,
    params,
    query: { where: JSON.stringify(["properties.$browser = 'Chrome'", "event IN ('first', 'other')"]) },
  });
  t.same(
    where.body.results.map((e: any) => e.event),
    ['first'],
  );
  const repeated = await call('events_list', {
    key: a.key,
    params,
    query: { where: ["lower(properties.$browser) = 'chrome'", 'toStartOfDay(timestamp) <= now()'] },
  });
  t.same(
    repeated.body.results.map((e: any) => e.event),
    ['first'],
    'repeated conditions, with functions',
  );
  const none = await call('events_list', {
    key: a.key,
    params,
    query: { where: JSON.stringify(["distinct_id = 'b1'"]) },
  });
  t.same(none.body.results, [], "another project's events stay out of reach");
  t.equal(
    await csvOf({ select: JSON.stringify(['uuid']), where: JSON.stringify(["event = 'first'"]) }),
    `uuid\r\n${uuid}\r\n`,
  );
  t.equal(
    await csvOf({ select: JSON.stringify(['event', 'distinct_id']) }),
    'event,distinct_id\r\nsecond,u2\r\nfirst,u1\r\n',
  );
  const injected = await call('events_list', {
    key: a.key,
    params,
    query: { where: JSON.stringify(['1=1) UNION SELECT * FROM users --']) },
  });
  t.match(injected.body, {
    type: 'validation_error',
    code: 'hogql_syntax_error',
    attr: 'where',
    detail: /^Syntax error at line 1, column 4: /,
  });
  const join = await call('events_list', {
    key: a.key,
    params,
    query: { format: 'csv', select: JSON.stringify(['(SELECT email FROM users)']) },
  });
  t.match(join.body, { type: 'validation_error', attr: 'select', detail: /^Unknown table "users"/ });
  const aggregate = await call('events_list', { key: a.key, params, query: { where: ['count() > 1'] } });
  t.match(aggregate.body, { type: 'validation_error', attr: 'where', detail: /^count\(\) is not supported here/ });
  const notStrings = await call('events_list', { key: a.key, params, query: { where: '[1, 2]' } });
  t.same(notStrings.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'where must be HogQL expressions: repeated, or one JSON array of strings.',
    attr: 'where',
  });
  const unknownField = await call('events_list', {
    key: a.key,
    params,
    query: { where: JSON.stringify(['password = 1']) },
  });
  t.match(unknownField.body, {
    type: 'validation_error',
    attr: 'where',
    detail: /Unable to resolve field: password/,
  });
});

t.test("select and where in the project's timezone, as PostHog compiles them for its team", async (t) => {
  const ny = await makeTenant(db);
  const patched = await call('organizations_projects_partial_update', {
    key: ny.key,
    params: { organization_id: ny.organization.id, id: ny.project.id },
    body: { timezone: 'America/New_York' },
  });
  t.equal(patched.status, 200);
  // New York is UTC-5 until 2024-03-10 07:00Z, UTC-4 after: its wall clock reads Mar 9 23:30, Mar 10 00:30,
  // Mar 10 23:59 and Mar 11 00:00.
  await insertEvents(
    db,
    ny.project.id,
    ['2024-03-10T04:30:00Z', '2024-03-10T05:30:00Z', '2024-03-11T03:59:00Z', '2024-03-11T04:00:00Z'].map((at, i) => ({
      event: 'tz',
      distinct_id: `n${i + 1}`,
      timestamp: new Date(at),
    })),
  );
  const listed = async (where: string[]) => {
    const res = await call('events_list', { key: ny.key, params: { project_id: ny.project.id }, query: { where } });
    t.equal(res.status, 200, where.join(' and '));
    return res.body.results.map((e: any) => e.distinct_id);
  };
  t.same(await listed(["toDate(timestamp) = '2024-03-10'"]), ['n3', 'n2'], "the project's days");
  t.same(
    await listed(["timestamp >= '2024-03-10 00:00:00'", "timestamp < '2024-03-11'"]),
    ['n3', 'n2'],
    "text without an offset is the project's wall clock",
  );
  t.same(await listed(["timestamp < '2024-03-10T05:00:00Z'"]), ['n1'], 'text with one keeps it');
  const csv = await call('events_list', {
    key: ny.key,
    params: { project_id: ny.project.id },
    query: {
      format: 'csv',
      select: ['distinct_id', 'toDate(timestamp)', 'toStartOfDay(timestamp)', 'timestamp'],
      where: ["toStartOfDay(timestamp) = '2024-03-10'"],
    },
  });
  t.equal(
    csv.raw,
    'distinct_id,toDate(timestamp),toStartOfDay(timestamp),timestamp\r\n' +
      'n3,2024-03-10,2024-03-10T00:00:00.000000-05:00,2024-03-10T23:59:00.000000-04:00\r\n' +
      'n2,2024-03-10,2024-03-10T00:00:00.000000-05:00,2024-03-10T00:30:00.000000-05:00\r\n',
    'date-times written in the project zone with its offset, as the Query API writes them',
  );
});
