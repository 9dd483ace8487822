// An EventsQuery's `after` and `before` without an offset are the project's wall clock (PostHog's runner prints
// a naive datetime in the team's timezone); with an offset or `Z` they are that instant; relative ones count
// back from now.
import { eq } from 'drizzle-orm';
import t from 'tap';
import { projects } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
await db.update(projects).set({ timezone: 'America/New_York' }).where(eq(projects.id, a.project.id));
// 23:30 on Feb 29th and 00:30 on March 1st in New York (UTC-5).
await insertEvents(db, a.project.id, [
  { event: 'late', timestamp: new Date('2024-03-01T04:30:00Z') },
  { event: 'early', timestamp: new Date('2024-03-01T05:30:00Z') },
]);

async function events(bounds: { after?: string; before?: string }) {
  const res = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: {
      query: { kind: 'EventsQuery', select: ['event'], orderBy: ['event'], ...bounds },
      refresh: 'force_blocking',
    },
  });
  if (res.status !== 200) t.fail(res.raw);
  return (res.body as { results: string[][] }).results.map((r) => r[0]);
}

t.test('naive dates and date-times are read in the project timezone', async (t) => {
  t.same(await events({ after: '2024-03-01' }), ['early'], 'after local midnight');
  t.same(await events({ before: '2024-03-01' }), ['late']);
  t.same(await events({ after: '2024-02-29T23:00:00' }), ['early', 'late']);
  t.same(await events({ after: '2024-03-01 00:00:00', before: '2024-03-01T01:00' }), ['early']);
});

t.test('an offset or Z names the instant', async (t) => {
  t.same(await events({ after: '2024-03-01T00:00:00Z' }), ['early', 'late']);
  t.same(await events({ after: '2024-03-01T00:00:00-05:00' }), ['early']);
});

t.test('a bad bound is a 400 on its attr', async (t) => {
  const res = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'EventsQuery', select: ['event'], after: 'yesterday-ish' } },
  });
  t.same([res.status, (res.body as { attr: string }).attr], [400, 'after']);
});
