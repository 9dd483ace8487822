// The HogQL subset: parsing with PostHog's refusals, and compiled conditions run against real rows.
import { and, eq, sql } from 'drizzle-orm';
import t from 'tap';
import { events } from '../../src/db/schema/index.js';
import {
  compileCondition,
  compileJsonValue,
  eventsScope,
  parseCondition,
  parseExpr,
  parseSelect,
  printSelect,
} from '../../src/hogql/index.js';
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

async function matching(condition: string): Promise<string> {
  const where = compileCondition(parseCondition(condition), eventsScope);
  const found = await db
    .select({ uuid: events.uuid })
    .from(events)
    .where(and(eq(events.project_id, a.project.id), where));
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
  for (const [condition, expected] of cases) t.equal(await matching(condition), expected, condition);
  t.throws(() => compileCondition(parseCondition("timestamp > 'soon'"), eventsScope), /is not a date-time/);
});

t.test('values compile to JSON with their types', async (t) => {
  const query = parseSelect(
    'SELECT uuid, event, timestamp, properties.price AS price, properties.$set, person_id, team_id FROM events',
  );
  const pairs = query.fields.map((f) => sql`${f.alias}::text, ${compileJsonValue(f.expr, eventsScope)}`);
  const [row] = await db
    .select({ line: sql<string>`json_build_object(${sql.join(pairs, sql`, `)})::text` })
    .from(events)
    .where(eq(events.uuid, rows[0]!.uuid));
  t.same(JSON.parse(row!.line), {
    uuid: rows[0]!.uuid,
    event: 'signup',
    timestamp: '2024-05-01T10:00:00.000000Z',
    price: 12,
    $set: { email: 'a@x.io' },
    person_id: person.uuid,
    team_id: a.project.id,
  });
});

t.test('parsing and refusals', async (t) => {
  const q = parseSelect("select event, properties.$browser as b from events where properties.$browser = 'x.$y'");
  t.equal(
    printSelect(q),
    "SELECT event, properties.$browser AS b FROM events WHERE properties.$browser = 'x.$y'",
    'a .$ident inside a string is left alone',
  );
  t.equal(
    printSelect(
      parseSelect(
        "SELECT event FROM events WHERE properties.b = 1 OR (event = 'x' OR event = 'y') AND NOT distinct_id = 'z'",
      ),
    ),
    "SELECT event FROM events WHERE properties.b = 1 OR ((event = 'x' OR event = 'y') AND NOT (distinct_id = 'z'))",
    'AND binds tighter than OR, parentheses kept',
  );
  t.same(parseExpr('properties.$set.email'), { kind: 'property', path: ['$set', 'email'] });
  t.same(parseCondition('distinct_id = NULL'), {
    kind: 'isNull',
    negated: false,
    expr: { kind: 'field', name: 'distinct_id' },
  });
  const refusals: [string, string][] = [
    ['SELECT event FROM events UNION ALL SELECT event FROM events', 'UNIONs are not supported'],
    ['SELECT event FROM events LEFT JOIN persons ON 1 = 1', 'JOINs are not supported'],
    ['SELECT event FROM sessions', 'Query must only SELECT FROM events'],
    ['SELECT event', 'Query must SELECT FROM events'],
    ['SELECT event FROM (SELECT event FROM events)', 'Subqueries or CTEs are not supported'],
    ['SELEC event FROM events', 'Failed to parse query'],
    ['SELECT event FROM events; SELECT 1', 'Failed to parse query'],
    ['SELECT count() FROM events', 'Unsupported HogQL query: function count() is not supported'],
    [
      'SELECT event FROM events GROUP BY event',
      'Unsupported HogQL query: only fields and a WHERE clause are supported',
    ],
    ['SELECT elements FROM events', 'Invalid HogQL query: Unable to resolve field: elements'],
    ['SELECT event FROM events WHERE event', 'Unsupported HogQL query: event is not a condition'],
  ];
  for (const [query, message] of refusals) t.throws(() => parseSelect(query), { message }, query);
  t.throws(() => parseCondition('event ='), { message: 'Failed to parse query' });
  t.throws(() => parseExpr("event = 'x'"), { message: "Unsupported HogQL query: event = 'x' is not a value" });
});
