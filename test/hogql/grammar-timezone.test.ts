// Dates in HogQL are cut and read in the project's timezone, as PostHog's team timezone: each case puts
// events at the edges of a New York day (and of its daylight-saving change) and counts them by hand.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
// A project in UTC that must never see the New York projects' events; its two events sit at the edges
// of a UTC window, which a New York reading of the same text would move.
const a = await makeTenant(db);
await insertEvents(db, a.project.id, [
  { event: 'signup', distinct_id: 'ann', timestamp: new Date('2024-05-01T10:00:00Z'), properties: {} },
  { event: 'signup', distinct_id: 'ann', timestamp: new Date('2024-05-01T23:30:00Z'), properties: {} },
]);

async function results(query: string): Promise<unknown[][]> {
  const res = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query } },
  });
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
  return res.body.results as unknown as unknown[][];
}
t.test("dates are cut and answered in the project's timezone, as PostHog's team timezone", async (t) => {
  const ny = await makeTenant(db);
  const patched = await call('organizations_projects_partial_update', {
    key: ny.key,
    params: { organization_id: ny.organization.id, id: ny.project.id },
    body: { timezone: 'America/New_York' },
  });
  t.equal(patched.status, 200);
  // New York is UTC-5 until 2024-03-10 02:00 local, UTC-4 after: the local days of these four events are
  // March 9 (23:30), March 10 (00:30 and 23:59) and March 11 (00:00). In UTC they would be two and two.
  await insertEvents(
    db,
    ny.project.id,
    ['2024-03-10T04:30:00Z', '2024-03-10T05:30:00Z', '2024-03-11T03:59:00Z', '2024-03-11T04:00:00Z'].map((at) => ({
      event: 'tz',
      distinct_id: 'nyc',
      timestamp: new Date(at),
    })),
  );
  let types: unknown;
  const query = async (q: string) => {
    const res = await call('query_create', {
      key: ny.key,
      params: { project_id: ny.project.id },
      body: { query: { kind: 'HogQLQuery', query: q } },
    });
    t.equal(res.status, 200, q);
    types = res.body.types;
    return res.body.results;
  };
  t.same(
    await query("select toStartOfDay(timestamp) as d, count() from events where event = 'tz' group by d order by d"),
    [
      ['2024-03-09T00:00:00.000000-05:00', 1],
      ['2024-03-10T00:00:00.000000-05:00', 2],
      ['2024-03-11T00:00:00.000000-04:00', 1],
    ],
  );
  t.same(await query("select toDate(timestamp), toHour(timestamp) from events where event = 'tz' order by timestamp"), [
    ['2024-03-09', 23],
    ['2024-03-10', 0],
    ['2024-03-10', 23],
    ['2024-03-11', 0],
  ]);
  t.same(
    await query(
      "select timestamp, toTimeZone(timestamp, 'UTC') from events where event = 'tz' order by timestamp limit 1",
    ),
    [['2024-03-09T23:30:00.000000-05:00', '2024-03-10T04:30:00.000000+00:00']],
    "a date-time is written in the project's zone unless the query names one",
  );
  t.same(types, [
    ['timestamp', "DateTime64(6, 'America/New_York')"],
    ["toTimeZone(timestamp, 'UTC')", "DateTime64(6, 'UTC')"],
  ]);
  t.same(
    await query(
      "select toDateTime('2024-03-09 12:00:00') + interval 1 day, " +
        "dateAdd('hour', 24, toDateTime('2024-03-09 12:00:00'))",
    ),
    [['2024-03-10T12:00:00.000000-04:00', '2024-03-10T13:00:00.000000-04:00']],
    "a day added keeps the wall-clock time across the change of daylight saving time, 24 hours do not (ClickHouse's)",
  );
  t.same(
    await results("select toDate(timestamp), count() from events where event = 'tz' group by 1"),
    [],
    'the other project sees none of them',
  );
});

t.test(
  "text without an offset is read in the project's timezone, as ClickHouse reads it in the column's",
  async (t) => {
    const ny = await makeTenant(db);
    const patched = await call('organizations_projects_partial_update', {
      key: ny.key,
      params: { organization_id: ny.organization.id, id: ny.project.id },
      body: { timezone: 'America/New_York' },
    });
    t.equal(patched.status, 200);
    // New York springs from 02:00 EST (07:00Z) to 03:00 EDT on 2024-03-10. In New York's wall clock these are
    // 1: Mar 9 23:59:59, 2: Mar 10 00:00, 3: 01:30, 4: 03:00, 5: 03:30, 6: 23:59:59, 7: Mar 11 00:00.
    const at = [
      '2024-03-10T04:59:59Z',
      '2024-03-10T05:00:00Z',
      '2024-03-10T06:30:00Z',
      '2024-03-10T07:00:00Z',
      '2024-03-10T07:30:00Z',
      '2024-03-11T03:59:59Z',
      '2024-03-11T04:00:00Z',
    ];
    // Events 3 and 4 carry their time as New York text, event 5 as UTC text.
    const local: Record<number, string> = {
      2: '2024-03-10 01:30',
      3: '2024-03-10 03:00:00',
      4: '2024-03-10T07:30:00Z',
    };
    await insertEvents(
      db,
      ny.project.id,
      at.map((ts, i) => ({
        event: 'w',
        distinct_id: `n${i + 1}`,
        timestamp: new Date(ts),
        properties: local[i] ? { at: local[i] } : {},
      })),
    );
    const ids = async (where: string, values?: Record<string, unknown>) => {
      const res = await call('query_create', {
        key: ny.key,
        params: { project_id: ny.project.id },
        body: {
          query: {
            kind: 'HogQLQuery',
            query: `select distinct_id from events where event = 'w' and (${where}) order by timestamp`,
            ...(values ? { values } : {}),
          },
        },
      });
      t.equal(res.status, 200, where);
      return (res.body.results as string[][]).map((r) => Number(r[0]!.slice(1)));
    };
    // Each expected list was read off the wall clock above; in UTC the same text would select other events.
    const cases: [string, number[]][] = [
      ["timestamp >= '2024-03-10 00:00:00' and timestamp < '2024-03-11 00:00:00'", [2, 3, 4, 5, 6]],
      ["timestamp >= '2024-03-10'", [2, 3, 4, 5, 6, 7]],
      ["timestamp < '2024-03-10'", [1]],
      ["timestamp between '2024-03-10 01:30:00' and '2024-03-10 03:30:00'", [3, 4, 5]],
      ["timestamp not between '2024-03-10 00:00:00' and '2024-03-10 23:59:59'", [1, 7]],
      ["timestamp in ('2024-03-10 03:00:00', '2024-03-10 00:00:00', '2024-03-09 23:59:59')", [1, 2, 4]],
      ["'2024-03-10 03:00:00' <= timestamp", [4, 5, 6, 7]],
      // An offset or Z keeps its own zone.
      ["timestamp >= '2024-03-10T05:00:00Z' and timestamp < '2024-03-10T03:00:00-04:00'", [2, 3]],
      ["timestamp = '2024-03-10T07:30:00+00:00'", [5]],
      // A date-time with a zone of its own reads text in that zone.
      ["toTimeZone(timestamp, 'UTC') >= '2024-03-11 00:00:00'", [6, 7]],
      ["toTimeZone(timestamp, 'Asia/Tokyo') < '2024-03-10 16:00:00'", [1, 2, 3]],
      // A date meeting a date-time is its first moment in the same zone.
      ["timestamp >= toDate('2024-03-11')", [7]],
      ["toDate(timestamp) = toDate('2024-03-10 01:00:00')", [2, 3, 4, 5, 6]],
      // Text read by toDateTime, or from a property compared with a date-time.
      ["toDateTime('2024-03-10 03:30:00') = timestamp", [5]],
      ['toDateTime(properties.at) = timestamp', [3, 4, 5]],
      ["if(event = 'w', timestamp, '2024-03-10 03:00:00') = '2024-03-10 03:00:00'", [4]],
      ["timestamp + interval 1 hour > '2024-03-11 00:00:00'", [6, 7]],
    ];
    for (const [where, expected] of cases) t.same(await ids(where), expected, where);
    t.same(await ids('timestamp >= {from}', { from: '2024-03-10 03:00:00' }), [4, 5, 6, 7], 'a placeholder too');
    const res = await call('query_create', {
      key: ny.key,
      params: { project_id: ny.project.id },
      body: {
        query: {
          kind: 'HogQLQuery',
          query: "select toDateTime('2024-03-10 00:00:00'), toDateTime('2024-03-10T12:00:00Z')",
        },
      },
    });
    t.same(res.body.results, [['2024-03-10T00:00:00.000000-05:00', '2024-03-10T08:00:00.000000-04:00']]);
    t.same(
      await results(
        "select count() from events where timestamp >= '2024-05-01 10:00:00' and timestamp < '2024-05-01 23:30'",
      ),
      [[1]],
      'a project in UTC reads the same text in UTC',
    );
  },
);
