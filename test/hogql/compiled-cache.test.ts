// A HogQL text compiled once is kept by project, timezone and values: asked again it must still answer for the
// project, zone and values of the request, never those of the request that compiled it first.
import { eq } from 'drizzle-orm';
import t from 'tap';
import { projects } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const a2 = await makeProject(db, a);
// 2024-06-01 23:30Z is June 1st in UTC and June 2nd in Berlin.
const at = new Date('2024-06-01T23:30:00Z');
await insertEvents(db, a.project.id, [
  { event: 'x', timestamp: at },
  { event: 'x', timestamp: at },
]);
await insertEvents(db, a2.id, [{ event: 'x', timestamp: at }]);
await insertEvents(db, b.project.id, [
  { event: 'x', timestamp: at },
  { event: 'y', timestamp: at },
]);

async function ask(key: string, projectId: number, query: string, values?: Record<string, unknown>) {
  const res = await call('query_create', {
    key,
    params: { project_id: projectId },
    body: { query: { kind: 'HogQLQuery', query, ...(values ? { values } : {}) }, refresh: 'force_blocking' },
  });
  if (res.status !== 200) t.fail(res.raw);
  return (res.body as { results: unknown[][] }).results;
}

t.test('one text, three projects of two organizations: each counts its own rows', async (t) => {
  const text = 'select count() from events';
  t.same(await ask(a.key, a.project.id, text), [[2]]);
  t.same(await ask(b.key, b.project.id, text), [[2]]);
  t.same(await ask(a.key, a2.id, text), [[1]]);
  t.same(await ask(a.key, a.project.id, text), [[2]], 'the first project again');
});

t.test('one text, other values', async (t) => {
  const text = 'select count() from events where event = {name}';
  t.same(await ask(b.key, b.project.id, text, { name: 'x' }), [[1]]);
  t.same(await ask(b.key, b.project.id, text, { name: 'nothing' }), [[0]]);
});

t.test("a project's new timezone changes the answer of a text compiled before", async (t) => {
  const text = 'select toString(toDate(timestamp)) from events limit 1';
  t.same(await ask(a.key, a2.id, text), [['2024-06-01']]);
  await db.update(projects).set({ timezone: 'Europe/Berlin' }).where(eq(projects.id, a2.id));
  // The request's project (and its zone) comes from the authentication cache, which a notification clears: the
  // answer may lag it by a moment, never for good.
  let answer = await ask(a.key, a2.id, text);
  for (const end = Date.now() + 10_000; answer[0]?.[0] !== '2024-06-02' && Date.now() < end; ) {
    await new Promise((r) => setTimeout(r, 100));
    answer = await ask(a.key, a2.id, text);
  }
  t.same(answer, [['2024-06-02']]);
});
