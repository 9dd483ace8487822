import type { Test } from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents, insertPerson } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

/**
 * The Query API's test data: tenant `a` with two persons (ann with two distinct ids, bob) and four events,
 * an anonymous one among them, and tenant `b` whose one secret event no query of `a` may ever see.
 */
export async function queryFixture(t: Test) {
  const ctx = await buildTestApp(t);
  const { call, db } = ctx;

  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const ann = await insertPerson(
    db,
    a.project.id,
    ['ann', 'ann-2'],
    { plan: 'pro', email: 'ann@x.io' },
    new Date('2024-04-01T00:00:00Z'),
  );
  const bob = await insertPerson(db, a.project.id, ['bob'], { plan: 'free' }, new Date('2024-04-02T00:00:00Z'));
  const rows = await insertEvents(db, a.project.id, [
    {
      event: 'signup',
      distinct_id: 'ann',
      person_id: ann.id,
      timestamp: new Date('2024-05-01T10:00:00Z'),
      properties: { $browser: 'Chrome', price: 12, nested: { k: 'v' } },
    },
    {
      event: 'signup',
      distinct_id: 'bob',
      person_id: bob.id,
      timestamp: new Date('2024-05-01T11:30:00Z'),
      properties: { $browser: 'Firefox', price: '7.5' },
    },
    {
      event: '$pageview',
      distinct_id: 'ann-2',
      person_id: ann.id,
      timestamp: new Date('2024-05-02T09:00:00Z'),
      properties: { $browser: 'Chrome', price: 'n/a', $session_id: 's1' },
    },
    { event: '$pageview', distinct_id: 'anon', timestamp: new Date('2024-05-03T09:00:00Z'), properties: {} },
  ]);
  const secretPerson = await insertPerson(db, b.project.id, ['zed'], { plan: 'secret' });
  await insertEvents(db, b.project.id, [
    {
      event: 'secret',
      distinct_id: 'zed',
      person_id: secretPerson.id,
      timestamp: new Date('2024-05-01T10:00:00Z'),
      properties: { $browser: 'Chrome', price: 1000 },
    },
  ]);

  const hogql = (
    query: string,
    extra: Record<string, unknown> = {},
    key = a.key,
    route: 'query_create' | 'environments_query_create' = 'query_create',
  ) => call(route, { key, params, body: { query: { kind: 'HogQLQuery', query, ...extra } } });
  const results = async (query: string, extra: Record<string, unknown> = {}) => {
    const res = await hogql(query, extra);
    if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
    return res.body.results;
  };

  return { ctx, call, db, a, b, params, ann, bob, rows, secretPerson, hogql, results };
}
