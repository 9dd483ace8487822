// RetentionQuery on a small known data set captured through the real endpoint; the expected numbers are
// worked out by hand from the events listed here.
import t, { type Test } from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { captureWithTwins } from '../helpers/events.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { posthogValidator } from './posthog-schema.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);

const ev = (event: string, distinct_id: string, day: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp: `2024-${day}T12:00:00Z`,
  properties,
});
const pv = (distinct_id: string, day: string) => ev('$pageview', distinct_id, day);
// Pageviews: r1 June 1, 2, 4; r2 June 2, 3 (and signs up June 2); r3 May 30 and June 3; a4 June 1, then
// u4 identifies as a4 (second batch) and views June 2: one person; r5 only after the range (June 5).
const batch1 = [
  pv('r1', '06-01'),
  pv('r1', '06-02'),
  pv('r1', '06-04'),
  pv('r2', '06-02'),
  ev('signup', 'r2', '06-02'),
  pv('r2', '06-03'),
  pv('r3', '05-30'),
  pv('r3', '06-03'),
  pv('a4', '06-01'),
  pv('r5', '06-05'),
];
const batch2 = [ev('$identify', 'u4', '06-02', { $anon_distinct_id: 'a4' }), pv('u4', '06-02')];
await captureWithTwins(ctx, a.project.api_token, b.project.api_token, [batch1, batch2]);

const validate = posthogValidator('RetentionQueryResponse');
type Cohort = { date: string; label: string; values: { count: number; label: string }[] };
const run = (
  retentionFilter: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  key = a.key,
  id = a.project.id,
) =>
  call('query_create', {
    key,
    params: { project_id: id },
    body: {
      query: {
        kind: 'RetentionQuery',
        dateRange: { date_to: '2024-06-04' },
        retentionFilter: { period: 'Day', totalIntervals: 4, ...retentionFilter },
        ...extra,
      } as never,
    },
  });
async function cohorts(t: Test, retentionFilter: Record<string, unknown>, key = a.key, id = a.project.id) {
  const res = await run(retentionFilter, {}, key, id);
  t.equal(res.status, 200, res.status === 200 ? 'answered' : JSON.stringify(res.body));
  if (validate && !validate(res.body))
    t.fail(`not PostHog's RetentionQueryResponse: ${JSON.stringify(validate.errors)}`);
  return (res.body as { results: Cohort[] }).results;
}
const grid = (rows: Cohort[]) => rows.map((r) => r.values.map((v) => v.count));

t.test('recurring, daily: cohorts of June 1-4', async (t) => {
  const rows = await cohorts(t, {});
  // June 1: r1 and a4/u4 (2); both back June 2; r1 June 4. June 2: r1, r2, u4 (3); r2 back June 3, r1 June 4.
  // June 3: r2 and r3 (2), nobody back June 4. June 4: r1.
  t.same(grid(rows), [
    [2, 2, 0, 1],
    [3, 1, 1, 0],
    [2, 0, 0, 0],
    [1, 0, 0, 0],
  ]);
  t.same(
    rows.map((r) => [r.label, r.date]),
    [
      ['Day 0', '2024-06-01T00:00:00Z'],
      ['Day 1', '2024-06-02T00:00:00Z'],
      ['Day 2', '2024-06-03T00:00:00Z'],
      ['Day 3', '2024-06-04T00:00:00Z'],
    ],
  );
  t.same(
    rows[0]!.values.map((v) => v.label),
    ['Day 0', 'Day 1', 'Day 2', 'Day 3'],
  );
});

t.test('first time: a cohort is the period of the first target event ever', async (t) => {
  const rows = await cohorts(t, { retentionType: 'retention_first_time' });
  // r3 first viewed May 30 (before the range): in no cohort. r2's first view is June 2.
  t.same(grid(rows), [
    [2, 2, 0, 1],
    [1, 1, 0, 0],
    [0, 0, 0, 0],
    [0, 0, 0, 0],
  ]);
});

t.test('target and returning events differ; weekly periods', async (t) => {
  const rows = await cohorts(t, {
    targetEntity: { id: 'signup', type: 'events' },
    returningEntity: { id: '$pageview', type: 'events' },
  });
  t.same(grid(rows), [
    [0, 0, 0, 0],
    [1, 1, 0, 0],
    [0, 0, 0, 0],
    [0, 0, 0, 0],
  ]);
  const weeks = await cohorts(t, { period: 'Week', totalIntervals: 2 });
  // Weeks from Sunday May 26 and June 2: r1, r3, a4 in the first, all three back; r1, r2, r3, u4 and r5 in the
  // second (the range ends with the week of date_to, June 8).
  t.same(grid(weeks), [
    [3, 3],
    [5, 0],
  ]);
  t.same(
    weeks.map((w) => [w.label, w.date]),
    [
      ['Week 0', '2024-05-26T00:00:00Z'],
      ['Week 1', '2024-06-02T00:00:00Z'],
    ],
  );
});

t.test('tenant wall: another project sees only its own', async (t) => {
  t.same(grid(await cohorts(t, {}, b.key, b.project.id)), [
    [4, 4, 0, 2],
    [6, 2, 2, 0],
    [4, 0, 0, 0],
    [2, 0, 0, 0],
  ]);
  const crossed = await run({}, {}, b.key, a.project.id);
  t.ok([403, 404].includes(crossed.status));
});

t.test('bad input and access', async (t) => {
  const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
    [{ period: 'Fortnight' }, {}, 'query__retentionFilter__period'],
    [{ retentionType: 'retention_first_ever_occurrence' }, {}, 'query__retentionFilter__retentionType'],
    [{ totalIntervals: 0 }, {}, 'query__retentionFilter__totalIntervals'],
    [{ totalIntervals: 5000 }, {}, 'query__retentionFilter__totalIntervals'],
    [{ targetEntity: { id: 3, type: 'actions' } }, {}, 'query__retentionFilter__targetEntity__type'],
    [{}, { breakdownFilter: { breakdown: '$browser' } }, 'query__breakdownFilter'],
    [{}, { dateRange: { date_to: 'tomorrowish' } }, 'query__dateRange__date_to'],
  ];
  for (const [filter, extra, attr] of cases) {
    const res = await run(filter, extra);
    t.equal(res.status, 400, JSON.stringify(filter));
    t.match(res.body, { type: 'validation_error', attr }, JSON.stringify(res.body));
  }
  const missing = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'RetentionQuery' } as never },
  });
  t.match(missing.body, { type: 'validation_error', attr: 'query__retentionFilter' });
  t.equal((await run({}, {}, await makeKey(db, a.user, ['insight:read']))).status, 403);
});
