// HogQL expressions inside our own SQL (the events listing's `select`/`where`, batch exports' `hogql_query`), on
// PostHog's parser and the one compiler: conditions run against real rows, values keep their JSON types, and
// what an export cannot be is refused with PostHog's words.
import { and, eq, sql, type SQL } from 'drizzle-orm';
import t from 'tap';
import { events, persons, projects } from '../../src/db/schema/index.js';
import { compileExpression, parseExpression, QueryError } from '../../src/hogql/index.js';
import { eventsTable, jsonValue, refuseAggregates } from '../../src/hogql/embedded.js';
import { toBool } from '../../src/hogql/types.js';
import { compileHogQL } from '../../src/batch-exports/hogql.js';
import { insertBatchExport } from '../../src/batch-exports/queries.js';
import { jsonTexts, recordSource } from '../../src/batch-exports/records.js';
import { ApiError } from '../../src/core/errors.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents, insertPerson } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { db } = ctx;
const a = await makeTenant(db);
const person = await insertPerson(db, a.project.id, ['p1'], { plan: 'pro' });
const rows = await insertEvents(db, a.project.id, [
  {
    event: 'signup',
    distinct_id: 'p1',
    person_id: person.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { $browser: 'Chrome', price: 12, plan: 'pro', $set: { email: 'a@x.io' } },
  },
  {
    event: 'signup',
    distinct_id: 'u2',
    timestamp: new Date('2024-05-01T11:00:00Z'),
    properties: { $browser: 'Firefox', price: '7.5', 'key with space': "it's" },
  },
  {
    event: '$pageview',
    distinct_id: 'u3',
    timestamp: new Date('2024-05-02T09:00:00Z'),
    properties: { $browser: 'chromium', price: 'n/a', flag: true },
  },
  { event: '$pageview', distinct_id: 'u4', timestamp: new Date('2024-05-03T09:00:00Z'), properties: { price: null } },
]);
const names = ['A', 'B', 'C', 'D'];
const nameOf = new Map(rows.map((r, i) => [r.uuid, names[i]!]));

const opts = { teamId: a.project.id };

async function condition(text: string): Promise<SQL> {
  const node = await parseExpression(text);
  refuseAggregates(node);
  return toBool(compileExpression(node, eventsTable(), opts), node.pos).sql;
}

async function matching(text: string): Promise<string> {
  const found = await db
    .select({ uuid: events.uuid })
    .from(events)
    .leftJoin(persons, eq(persons.id, events.person_id))
    .where(and(eq(events.project_id, a.project.id), await condition(text)));
  return found
    .map((r) => nameOf.get(r.uuid))
    .sort()
    .join('');
}

t.test('conditions select the right rows', async (t) => {
  const cases: [string, string][] = [
    ["event = 'signup'", 'AB'],
    ["event != 'signup'", 'CD'],
    ["properties.$browser = 'Chrome'", 'A'],
    ["properties['$browser'] ILIKE 'chrom%'", 'AC'],
    ["properties.$browser LIKE 'Chrom%'", 'A'],
    ["properties.$browser NOT ILIKE '%fox'", 'AC'],
    ['properties.price > 10', 'A'],
    ['properties.price < 10', 'B'],
    ['10 > properties.price', 'B'],
    ['properties.price >= 7.5 AND properties.price <= 12', 'AB'],
    ['properties.price IS NULL', 'D'],
    ['properties.missing IS NULL', 'ABCD'],
    ['properties.$browser IS NOT NULL', 'ABC'],
    ["distinct_id IN ('p1', 'u3')", 'AC'],
    ["distinct_id NOT IN ('p1', 'u3')", 'BD'],
    ["properties.$set.email = 'a@x.io'", 'A'],
    ["properties['key with space'] = 'it''s'", 'B'],
    ["properties['key with space'] = 'it\\'s'", 'B'],
    ['properties.flag = true', 'C'],
    ["timestamp >= '2024-05-02T00:00:00Z'", 'CD'],
    ["timestamp < '2024-05-01T10:30:00+00:00' OR event = '$pageview' AND distinct_id = 'u4'", 'AD'],
    ["NOT (event = 'signup' OR properties.price IS NULL)", 'C'],
    ["event = '$pageview' AND distinct_id = 'u3' OR event = 'signup' AND distinct_id = 'u2'", 'BC'],
    ["(event = '$pageview' OR distinct_id = 'p1') AND properties.$browser IS NOT NULL", 'AC'],
    ["event = 'signup' AND (distinct_id = 'u2' OR distinct_id = 'u3' AND event = 'x')", 'B'],
    [`person_id = '${person.uuid}'`, 'A'],
    [`team_id = ${a.project.id}`, 'ABCD'],
    ["events.event = 'signup' AND properties.plan = 'pro'", 'A'],
  ];
  for (const [text, expected] of cases) t.equal(await matching(text), expected, text);
  await t.rejects(condition("timestamp > 'soon'"), /Cannot convert "soon" to a date-time/);
  await t.rejects(condition('count() > 1'), { message: /count\(\) is not supported here/ });
  await t.rejects(condition('row_number() over () = 1'), { message: /row_number\(\) is not supported here/ });
  await t.rejects(condition('event ='), { constructor: QueryError, code: 'hogql_syntax_error' });
});

t.test('values compile to JSON with their types', async (t) => {
  const texts = ['uuid', 'event', 'timestamp', 'properties.price', 'properties.$set', 'person_id', 'team_id'];
  const values = await Promise.all(
    texts.map(async (text) => {
      const node = await parseExpression(text);
      return jsonValue(node, compileExpression(node, eventsTable(), opts));
    }),
  );
  const [row] = await db
    .select({ line: sql<string>`json_build_array(${sql.join(values, sql`, `)})::text` })
    .from(events)
    .leftJoin(persons, eq(persons.id, events.person_id))
    .where(eq(events.uuid, rows[0]!.uuid));
  t.same(JSON.parse(row!.line), [
    rows[0]!.uuid,
    'signup',
    '2024-05-01T10:00:00.000000Z',
    12,
    { email: 'a@x.io' },
    person.uuid,
    a.project.id,
  ]);
});

t.test("export queries: the schema, and refusals in PostHog's words", async (t) => {
  t.same(
    await compileHogQL(
      "select event, lower(properties.$browser) as b, properties['plan'], toStartOfDay(timestamp) from events " +
        "where properties.$browser = 'x.$y'",
    ),
    {
      fields: [
        { expression: 'event', alias: 'event' },
        { expression: 'lower(properties.$browser)', alias: 'b' },
        { expression: 'properties.plan', alias: 'plan' },
        { expression: 'toStartOfDay(timestamp)', alias: 'toStartOfDay(timestamp)' },
      ],
      values: {},
      hogql_query:
        'SELECT event, lower(properties.$browser) AS b, properties.plan, toStartOfDay(timestamp) FROM events ' +
        "WHERE properties.$browser = 'x.$y'",
    },
  );
  const refusals: [string, string | RegExp][] = [
    ['SELECT event FROM events UNION ALL SELECT event FROM events', 'UNIONs are not supported'],
    ['SELECT event FROM events LEFT JOIN persons ON 1 = 1', 'JOINs are not supported'],
    ['SELECT event FROM sessions', 'Query must only SELECT FROM events'],
    ['SELECT event', 'Query must SELECT FROM events'],
    ['SELECT event FROM (SELECT event FROM events)', 'Subqueries or CTEs are not supported'],
    ['WITH x AS (SELECT 1) SELECT event FROM events', 'Subqueries or CTEs are not supported'],
    ['SELEC event FROM events', /^Failed to parse query: Syntax error at line 1, column 1: /],
    ['SELECT event FROM events; SELECT 1', /^Failed to parse query: Syntax error at line 1, column 27: /],
    ['SELECT count() FROM events', /^count\(\) is not supported here/],
    [
      'SELECT event FROM events GROUP BY event',
      'Unsupported HogQL query: only fields and a WHERE clause are supported',
    ],
    ['SELECT * FROM events', 'Unsupported HogQL query: select the fields to export instead of *'],
    ['SELECT elements FROM events', /^Invalid HogQL query: Unable to resolve field: elements/],
    ['SELECT event, properties.event FROM events', /the field name "event" is used twice/],
    ['SELECT nosuch(event) FROM events', /^Invalid HogQL query: Unsupported function call 'nosuch/],
  ];
  for (const [query, message] of refusals) {
    const err = await compileHogQL(query).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof ApiError, query);
    t.match((err as ApiError).body, { type: 'validation_error', attr: 'hogql_query' }, query);
    if (typeof message === 'string') t.equal((err as ApiError).detail, message, query);
    else t.match((err as ApiError).detail, message, query);
  }
});

t.test("an export's query runs in its project's timezone", async (t) => {
  const ny = await makeTenant(db);
  await db.update(projects).set({ timezone: 'America/New_York' }).where(eq(projects.id, ny.project.id));
  // New York's wall clock: Mar 9 23:30 (EST), Mar 10 00:30 (EST), Mar 10 23:59 (EDT), Mar 11 00:00 (EDT).
  await insertEvents(
    db,
    ny.project.id,
    ['2024-03-10T04:30:00Z', '2024-03-10T05:30:00Z', '2024-03-11T03:59:00Z', '2024-03-11T04:00:00Z'].map((at, i) => ({
      event: 'tz',
      distinct_id: `n${i + 1}`,
      timestamp: new Date(at),
    })),
  );
  const exp = await insertBatchExport(db, {
    project_id: ny.project.id,
    name: 'tz',
    destination_type: 'S3',
    destination_config: { bucket_name: 'b', region: 'us-east-1', prefix: '' },
    paused: true,
    hogql_query:
      'SELECT distinct_id, toDate(timestamp) AS day, toStartOfDay(timestamp) AS start, ' +
      "toTimeZone(timestamp, 'Asia/Kolkata') AS india FROM events WHERE timestamp >= '2024-03-10 00:00:00'",
  });
  const source = await recordSource(db, exp, null, new Date('2024-04-01T00:00:00Z'));
  const records: unknown[] = [];
  for await (const batch of source.batches(100)) records.push(...jsonTexts(batch).map((l) => JSON.parse(l)));
  t.same(
    records,
    [
      {
        distinct_id: 'n2',
        day: '2024-03-10',
        start: '2024-03-10T05:00:00.000000Z',
        india: '2024-03-10T11:00:00.000000+05:30',
      },
      {
        distinct_id: 'n3',
        day: '2024-03-10',
        start: '2024-03-10T05:00:00.000000Z',
        india: '2024-03-11T09:29:00.000000+05:30',
      },
      {
        distinct_id: 'n4',
        day: '2024-03-11',
        start: '2024-03-11T04:00:00.000000Z',
        india: '2024-03-11T09:30:00.000000+05:30',
      },
    ],
    "New York's days and wall clock; instants written in UTC unless the query names a zone",
  );
});
