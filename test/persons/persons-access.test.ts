// Who may read and change persons: person:read / person:write (activity_log:read for the activity
// pages), the caller's own projects only (another project's person is a 404 by id and by uuid; another
// organization's project is refused), and the environments route as the projects one.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { capture, personOf, storedEvents } from '../helpers/events.js';
import { makeKey, makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const a = await makeTenant(db);
const b = await makeTenant(db);
const sibling = await makeProject(db, a);
await capture(ctx, a.project.api_token, [
  { event: 'e', distinct_id: 'a-user', properties: { $set: { email: 'a@x.io' } } },
]);
await capture(ctx, b.project.api_token, [{ event: 'e', distinct_id: 'b-user' }]);
await capture(ctx, sibling.api_token, [{ event: 'e', distinct_id: 's-user' }]);
const aPerson = (await personOf(db, a.project.id, 'a-user'))!;
const bPerson = (await personOf(db, b.project.id, 'b-user'))!;
const sPerson = (await personOf(db, sibling.id, 's-user'))!;
const params = { project_id: a.project.id };

t.test('no key is 401; a key without person scopes is 403; read cannot write', async (t) => {
  const anon = await call('persons_list', { params });
  t.equal(anon.status, 401);
  t.match(anon.body, { type: 'authentication_error', code: 'not_authenticated' });
  const other = await makeKey(db, a.user, ['event_definition:read']);
  const refused = await call('persons_list', { key: other, params });
  t.equal(refused.status, 403);
  t.match(refused.body, { type: 'authentication_error', code: 'permission_denied', detail: /person:read/ });
  const reader = await makeKey(db, a.user, ['person:read']);
  t.equal((await call('persons_list', { key: reader, params })).status, 200);
  t.equal((await call('persons_retrieve', { key: reader, params: { ...params, id: aPerson.id } })).status, 200);
  const writes = [
    call('persons_destroy', { key: reader, params: { ...params, id: aPerson.id } }),
    call('persons_partial_update', {
      key: reader,
      params: { ...params, id: aPerson.id },
      body: { properties: { x: 1 } },
    }),
    call('persons_bulk_delete_create', { key: reader, params, body: { ids: [aPerson.uuid] } }),
    call('persons_split_create', { key: reader, params: { ...params, id: aPerson.id } }),
    call('persons_delete_events_create', { key: reader, params: { ...params, id: aPerson.id } }),
    call('persons_delete_property_create', {
      key: reader,
      params: { ...params, id: aPerson.id },
      body: { $unset: 'email' },
    }),
    call('persons_update_property_create', {
      key: reader,
      params: { ...params, id: aPerson.id },
      body: { key: 'k', value: 1 },
    }),
  ];
  for (const res of await Promise.all(writes)) {
    t.equal(res.status, 403);
    t.match(res.body, { detail: /person:write/ });
  }
  t.equal(
    (await call('persons_activity_retrieve', { key: reader, params })).status,
    403,
    'activity needs activity_log:read',
  );
  const activity = await makeKey(db, a.user, ['activity_log:read']);
  t.equal((await call('persons_activity_retrieve', { key: activity, params })).status, 200);
  const writer = await makeKey(db, a.user, ['person:write']);
  t.equal((await call('persons_list', { key: writer, params })).status, 200, 'write implies read');
  t.ok(await personOf(db, a.project.id, 'a-user'), 'the refused writes changed nothing');
  t.same((await personOf(db, a.project.id, 'a-user'))!.properties, { email: 'a@x.io' });
});

t.test("another project's person is a 404 by id and by uuid, for every operation", async (t) => {
  for (const other of [bPerson, sPerson]) {
    for (const id of [other.id, other.uuid]) {
      const item = { ...params, id };
      const answers = await Promise.all([
        call('persons_retrieve', { key: a.key, params: item }),
        call('persons_destroy', { key: a.key, params: item, query: { delete_events: true } }),
        call('persons_partial_update', { key: a.key, params: item, body: { properties: { x: 1 } } }),
        call('persons_update', { key: a.key, params: item, body: { properties: { x: 1 } } }),
        call('persons_update_property_create', { key: a.key, params: item, body: { key: 'k', value: 1 } }),
        call('persons_delete_property_create', { key: a.key, params: item, body: { $unset: 'k' } }),
        call('persons_split_create', { key: a.key, params: item }),
        call('persons_delete_events_create', { key: a.key, params: item }),
        call('persons_activity_retrieve_2', { key: a.key, params: item }),
      ]);
      for (const res of answers) t.equal(res.status, 404, `${id}: ${res.raw}`);
    }
  }
  // Bulk deletion and the list filters see only the path's project.
  const bulk = await call('persons_bulk_delete_create', {
    key: a.key,
    params,
    body: { ids: [bPerson.uuid, sPerson.id], delete_events: true },
  });
  t.equal(bulk.status, 202);
  const byDistinct = await call('persons_bulk_delete_create', {
    key: a.key,
    params,
    body: { distinct_ids: ['b-user', 's-user'] },
  });
  t.equal(byDistinct.status, 202);
  const listed = json<'persons_list'>(
    await call('persons_list', { key: a.key, params, query: { distinct_id: 'b-user' } }),
  );
  t.equal(listed.count, 0);
  t.equal((await personOf(db, b.project.id, 'b-user'))!.id, bPerson.id, "b's person untouched");
  t.equal((await personOf(db, sibling.id, 's-user'))!.id, sPerson.id, "the sibling project's person untouched");
  t.equal((await storedEvents(db, b.project.id)).length, 1, "b's events untouched");
});

t.test("another organization's project is refused; a key scoped to another project too", async (t) => {
  const bParams = { project_id: b.project.id };
  const list = await call('persons_list', { key: a.key, params: bParams });
  t.ok([403, 404].includes(list.status), `list: ${list.status}`);
  const del = await call('persons_destroy', {
    key: a.key,
    params: { ...bParams, id: bPerson.id },
    query: { delete_events: true },
  });
  t.ok([403, 404].includes(del.status), `delete: ${del.status}`);
  const scoped = await makeKey(db, a.user, ['*'], { scoped_teams: [sibling.id] });
  t.equal((await call('persons_list', { key: scoped, params })).status, 403);
  t.equal((await call('persons_list', { key: scoped, params: { project_id: sibling.id } })).status, 200);
  t.equal((await personOf(db, b.project.id, 'b-user'))!.id, bPerson.id);
  t.equal((await storedEvents(db, b.project.id)).length, 1);
});

t.test('the environments route is the same operation', async (t) => {
  const list = json<'environments_persons_list'>(await call('environments_persons_list', { key: a.key, params }));
  const viaProjects = json<'persons_list'>(await call('persons_list', { key: a.key, params }));
  t.same(list, { ...viaProjects, next: list.next, previous: list.previous });
  t.same(
    json<'environments_persons_retrieve'>(
      await call('environments_persons_retrieve', { key: a.key, params: { ...params, id: aPerson.uuid } }),
    ),
    viaProjects.results.find((p) => p.id === aPerson.id),
  );
  const gone = await capture(ctx, a.project.api_token, [{ event: 'e', distinct_id: 'env-user' }]).then(() =>
    personOf(db, a.project.id, 'env-user'),
  );
  const del = await call('environments_persons_destroy', {
    key: a.key,
    params: { ...params, id: gone!.id },
    query: { delete_events: true },
  });
  t.equal(del.status, 202);
  t.equal(await personOf(db, a.project.id, 'env-user'), undefined);
  t.notOk((await storedEvents(db, a.project.id)).some((e) => e.distinct_id === 'env-user'));
  const otherB = await call('environments_persons_retrieve', { key: a.key, params: { ...params, id: bPerson.id } });
  t.equal(otherB.status, 404);
});
