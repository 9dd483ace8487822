// PostHog's "Person" activity log: who updated a person's properties, deleted one, split or deleted a person
// through the API, newest first, per project and per person; the entry of a deleted person stays on the
// project's page. Changes that arrive as events are not logged.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { capture, personOf } from '../helpers/events.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

async function seeded() {
  const tenant = await makeTenant(db);
  await capture(ctx, tenant.project.api_token, [
    { event: 'e', distinct_id: 'ann', properties: { $set: { plan: 'pro', age: 3 } } },
    { event: 'e', distinct_id: 'ben' },
    { event: '$identify', distinct_id: 'cat', properties: { $anon_distinct_id: 'cat-anon' } },
  ]);
  const id = async (d: string) => (await personOf(db, tenant.project.id, d))!;
  return {
    tenant,
    params: { project_id: tenant.project.id },
    ann: await id('ann'),
    ben: await id('ben'),
    cat: await id('cat'),
  };
}

t.test('each change through the API is an entry, newest first, with who did it', async (t) => {
  const { tenant, params, ann, ben, cat } = await seeded();
  const other = await seeded();
  const item = (id: number) => ({ ...params, id });
  const key = tenant.key;
  t.equal(
    (await call('persons_partial_update', { key, params: item(ann.id), body: { properties: { a: 1 } } })).status,
    202,
  );
  t.equal(
    (await call('persons_update_property_create', { key, params: item(ann.id), body: { key: 'b', value: 2 } })).status,
    202,
  );
  t.equal(
    (await call('persons_delete_property_create', { key, params: item(ann.id), body: { $unset: 'age' } })).status,
    201,
  );
  t.equal((await call('persons_split_create', { key, params: item(cat.id), body: {} })).status, 201);
  t.equal((await call('persons_destroy', { key, params: item(ben.id) })).status, 202);
  // Another project's changes stay on its own page.
  await call('persons_partial_update', {
    key: other.tenant.key,
    params: { ...other.params, id: other.ann.id },
    body: { properties: { x: 1 } },
  });

  const page = json<'persons_activity_retrieve'>(await call('persons_activity_retrieve', { key, params }));
  t.equal(page.total_count, 5);
  t.same(
    page.results.map((e) => [e.activity, e.item_id, e.scope, e.user?.email]),
    [
      ['deleted', String(ben.id), 'Person', tenant.user.email],
      ['split_person', String(cat.id), 'Person', tenant.user.email],
      ['delete_property', String(ann.id), 'Person', tenant.user.email],
      ['updated', String(ann.id), 'Person', tenant.user.email],
      ['updated', String(ann.id), 'Person', tenant.user.email],
    ],
  );
  t.same(page.results[0]!.detail, { name: ben.uuid, changes: null });
  t.same(page.results[1]!.detail, {
    name: cat.uuid,
    changes: [
      { type: 'Person', action: 'split', field: null, before: null, after: { distinct_ids: ['cat', 'cat-anon'] } },
    ],
  });
  t.same(page.results[2]!.detail, {
    name: ann.uuid,
    changes: [{ type: 'Person', action: 'changed', field: null, before: null, after: null }],
  });
  t.same(page.results[3]!.detail, {
    name: null,
    changes: [{ type: 'Person', action: 'changed', field: 'properties', before: null, after: null }],
  });

  const annPage = json<'persons_activity_retrieve_2'>(
    await call('persons_activity_retrieve_2', { key, params: item(ann.id) }),
  );
  t.same(
    annPage.results.map((e) => e.activity),
    ['delete_property', 'updated', 'updated'],
  );
  t.equal((await call('persons_activity_retrieve_2', { key, params: item(ben.id) })).status, 404, 'a deleted person');
  t.equal(
    (await call('persons_activity_retrieve_2', { key, params: item(other.ann.id) })).status,
    404,
    "another project's person on this project's path",
  );
  const small = json<'persons_activity_retrieve'>(
    await call('persons_activity_retrieve', { key, params, query: { limit: 2, page: 2 } }),
  );
  t.same(
    small.results.map((e) => e.activity),
    ['delete_property', 'updated'],
  );
  t.ok(small.next && small.previous, 'pages link both ways');
});

t.test('changes that arrive as events are not logged; a refused change logs nothing', async (t) => {
  const { tenant, params, ann } = await seeded();
  await capture(ctx, tenant.project.api_token, [{ event: 'e', distinct_id: 'ann', properties: { $set: { z: 1 } } }]);
  const bad = await call('persons_partial_update', {
    key: tenant.key,
    params: { ...params, id: ann.id },
    body: { properties: 'nope' as never },
  });
  t.equal(bad.status, 400);
  const page = json<'persons_activity_retrieve'>(await call('persons_activity_retrieve', { key: tenant.key, params }));
  t.same(page, { results: [], next: null, previous: null, total_count: 0 });
});
