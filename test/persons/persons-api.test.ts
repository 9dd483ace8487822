// The persons API read and change paths: list (filters, pages), retrieve by id and uuid, the display
// name rule, property changes through events, split. Deletion is in persons-delete.test.ts.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { capture, personOf, storedEvents } from '../helpers/events.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const ANON = '0190a0b0-1234-7abc-8def-0123456789ab';

/** alice (identified, with an anonymous id), bob, carol: one capture each, so they are created in that order. */
async function seeded() {
  const tenant = await makeTenant(db);
  const token = tenant.project.api_token;
  await capture(ctx, token, [{ event: '$pageview', distinct_id: ANON }]);
  await capture(ctx, token, [
    {
      event: '$identify',
      distinct_id: 'alice',
      properties: { $anon_distinct_id: ANON, $set: { email: 'alice@example.com', plan: 'pro', age: 31 } },
    },
  ]);
  await capture(ctx, token, [
    { event: 'e', distinct_id: 'bob', properties: { $set: { name: 'Bob', plan: 'free', age: 25 } } },
  ]);
  await capture(ctx, token, [{ event: 'e', distinct_id: 'carol' }]);
  const id = async (d: string) => (await personOf(db, tenant.project.id, d))!;
  return {
    tenant,
    params: { project_id: tenant.project.id },
    alice: await id('alice'),
    bob: await id('bob'),
    carol: await id('carol'),
  };
}

t.test('list: newest first, every field, each item as its retrieve', async (t) => {
  const { tenant, params, alice, bob, carol } = await seeded();
  const page = json<'persons_list'>(await call('persons_list', { key: tenant.key, params }));
  t.equal(page.count, 3);
  t.equal(page.next, null);
  t.same(
    page.results.map((p) => p.id),
    [carol.id, bob.id, alice.id],
  );
  const a = page.results[2]!;
  // The identified id before the anonymous (UUID) one; the name is the email.
  t.same(a, {
    id: alice.id,
    uuid: alice.uuid,
    name: 'alice@example.com',
    distinct_ids: ['alice', ANON],
    properties: { email: 'alice@example.com', plan: 'pro', age: 31 },
    created_at: alice.created_at.toISOString(),
  });
  t.equal(page.results[1]!.name, 'Bob', 'name property when there is no email');
  t.equal(page.results[0]!.name, 'carol', 'else the first distinct id');
  for (const item of page.results) {
    t.same(
      json<'persons_retrieve'>(await call('persons_retrieve', { key: tenant.key, params: { ...params, id: item.id } })),
      item,
    );
    t.same(
      json<'persons_retrieve'>(
        await call('persons_retrieve', { key: tenant.key, params: { ...params, id: item.uuid } }),
      ),
      item,
    );
  }
  const upper = await call('persons_retrieve', {
    key: tenant.key,
    params: { ...params, id: alice.uuid.toUpperCase() },
  });
  t.equal(upper.status, 200, 'a uuid in capitals names the same person');
});

t.test('list filters', async (t) => {
  const { tenant, params, alice, bob, carol } = await seeded();
  const ids = async (query: Record<string, string>) =>
    json<'persons_list'>(await call('persons_list', { key: tenant.key, params, query })).results.map((p) => p.id);
  t.same(await ids({ distinct_id: ANON }), [alice.id], "distinct_id: any of the person's ids");
  t.same(await ids({ distinct_id: 'nobody' }), []);
  t.same(await ids({ email: 'alice@example.com' }), [alice.id]);
  t.same(await ids({ email: 'ALICE@example.com' }), [], 'email is exact');
  t.same(await ids({ search: 'ALICE@' }), [alice.id], 'search: email contains, any case');
  t.same(await ids({ search: 'bo' }), [bob.id], 'search: name contains');
  t.same(await ids({ search: 'carol' }), [carol.id], 'search: exact distinct id');
  t.same(await ids({ search: 'car' }), [], 'a distinct id only matches exactly');
  t.same(await ids({ search: bob.uuid }), [bob.id], 'search: uuid');
  t.same(await ids({ search: '%' }), [], 'LIKE wildcards are literal');
  const props = (filters: unknown[]) => ids({ properties: JSON.stringify(filters) });
  t.same(await props([{ key: 'plan', value: 'pro', type: 'person' }]), [alice.id]);
  t.same(await props([{ key: 'age', value: 30, operator: 'gt', type: 'person' }]), [alice.id]);
  t.same(await props([{ key: 'plan', operator: 'is_set', type: 'person' }]), [bob.id, alice.id]);
  t.same(
    await props([
      {
        type: 'OR',
        values: [
          { key: 'plan', value: 'free', type: 'person' },
          { key: 'age', value: 31, type: 'person' },
        ],
      },
    ]),
    [bob.id, alice.id],
  );
  t.same(
    await props([{ key: '$browser', value: 'x', type: 'event' }]),
    [carol.id, bob.id, alice.id],
    'event filters do not apply',
  );
  const bad = await call('persons_list', { key: tenant.key, params, query: { properties: '[{' } });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', attr: 'properties', detail: 'Properties are unparsable!' });
  const regex = await call('persons_list', {
    key: tenant.key,
    params,
    query: { properties: JSON.stringify([{ key: 'plan', value: '(', operator: 'regex', type: 'person' }]) },
  });
  t.equal(regex.status, 400);
});

t.test('pages by limit and offset, with next and previous', async (t) => {
  const { tenant, params, alice, bob, carol } = await seeded();
  const first = json<'persons_list'>(await call('persons_list', { key: tenant.key, params, query: { limit: 2 } }));
  t.same(
    first.results.map((p) => p.id),
    [carol.id, bob.id],
  );
  t.equal(first.count, 3);
  const next = new URL(first.next!);
  t.equal(next.searchParams.get('offset'), '2');
  t.equal(first.previous, null);
  const second = json<'persons_list'>(
    await call('persons_list', { key: tenant.key, params, query: { limit: 2, offset: 2 } }),
  );
  t.same(
    second.results.map((p) => p.id),
    [alice.id],
  );
  t.equal(second.next, null);
  t.not(second.previous, null);
  const huge = await call('persons_list', { key: tenant.key, params, query: { limit: 100000 } });
  t.equal(huge.status, 200, 'a limit above the cap is clamped');
});

t.test("retrieve: a path id that is neither a number nor a uuid is PostHog's 400; unknown ids are 404", async (t) => {
  const { tenant, params } = await seeded();
  const bad = await call('persons_retrieve', { key: tenant.key, params: { ...params, id: 'alice' } });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', detail: /does not look like a personID.*distinct_id=alice/ });
  for (const id of ['2000000000', '99999999999999', '00000000-0000-4000-8000-000000000000']) {
    t.equal((await call('persons_retrieve', { key: tenant.key, params: { ...params, id } })).status, 404, id);
  }
});

t.test('PATCH, PUT and update_property set properties through a $set event; delete_property unsets', async (t) => {
  const { tenant, params, alice } = await seeded();
  const item = { ...params, id: alice.id };
  const patch = await call('persons_partial_update', {
    key: tenant.key,
    params: item,
    body: { properties: { plan: 'team', seats: 5 } },
  });
  t.equal(patch.status, 202);
  t.equal(patch.raw, '');
  let now = json<'persons_retrieve'>(await call('persons_retrieve', { key: tenant.key, params: item }));
  t.same(now.properties, { email: 'alice@example.com', plan: 'team', age: 31, seats: 5 }, 'only the named ones change');
  t.equal(
    (await call('persons_update', { key: tenant.key, params: item, body: { properties: { age: 32 } } })).status,
    202,
  );
  const viaBody = await call('persons_update_property_create', {
    key: tenant.key,
    params: item,
    body: { key: 'nested', value: { a: [1] } },
  });
  t.equal(viaBody.status, 202);
  const viaQuery = await call('persons_update_property_create', {
    key: tenant.key,
    params: item,
    query: { key: 'q', value: 'v' },
  });
  t.equal(viaQuery.status, 202);
  const unset = await call('persons_delete_property_create', {
    key: tenant.key,
    params: item,
    body: { $unset: 'seats' },
  });
  t.equal(unset.status, 201);
  t.same(unset.body, { success: true });
  now = json<'persons_retrieve'>(await call('persons_retrieve', { key: tenant.key, params: item }));
  t.same(now.properties, { email: 'alice@example.com', plan: 'team', age: 32, nested: { a: [1] }, q: 'v' });
  const events = (await storedEvents(db, tenant.project.id)).filter((e) => e.person_id === alice.id);
  t.same(
    events.map((e) => e.event).slice(-5),
    ['$set', '$set', '$set', '$set', '$delete_person_property'],
    'each change is an event of the person, as in PostHog',
  );
  t.equal(events.at(-1)!.distinct_id, 'alice', 'sent as the identified distinct id');
});

t.test('property changes: validation', async (t) => {
  const { tenant, params, bob } = await seeded();
  const item = { ...params, id: bob.id };
  const noProps = await call('persons_partial_update', { key: tenant.key, params: item, body: {} });
  t.equal(noProps.status, 400);
  t.match(noProps.body, { type: 'validation_error', attr: 'properties' });
  const notObject = await call('persons_update', {
    key: tenant.key,
    params: item,
    payload: '{"properties": [1]}',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(notObject.status, 400);
  const noValue = await call('persons_update_property_create', { key: tenant.key, params: item, body: { key: 'k' } });
  t.equal(noValue.status, 400);
  t.match(noValue.body, { attr: 'value' });
  const nullValue = await call('persons_update_property_create', {
    key: tenant.key,
    params: item,
    body: { key: 'k', value: null },
  });
  t.match(nullValue.body, { attr: 'value' });
  const noKey = await call('persons_update_property_create', { key: tenant.key, params: item, body: { value: 1 } });
  t.equal(noKey.status, 400);
  t.match(noKey.body, { attr: 'key' });
  const noUnset = await call('persons_delete_property_create', { key: tenant.key, params: item, body: {} });
  t.equal(noUnset.status, 400);
  t.match(noUnset.body, { attr: '$unset' });
  const after = json<'persons_retrieve'>(await call('persons_retrieve', { key: tenant.key, params: item }));
  t.same(after.properties, { name: 'Bob', plan: 'free', age: 25 }, 'nothing changed');
  t.equal(
    (
      await call('persons_partial_update', {
        key: tenant.key,
        params: { ...params, id: 2000000000 },
        body: { properties: {} },
      })
    ).status,
    404,
  );
});

t.test('split: every other distinct id gets its own person, and its events', async (t) => {
  const { tenant, params, alice } = await seeded();
  const res = await call('persons_split_create', {
    key: tenant.key,
    params: { ...params, id: alice.id },
    body: { main_distinct_id: 'alice' },
  });
  t.equal(res.status, 201);
  t.same(res.body, { success: true });
  const kept = json<'persons_retrieve'>(
    await call('persons_retrieve', { key: tenant.key, params: { ...params, id: alice.id } }),
  );
  t.same(kept.distinct_ids, ['alice']);
  t.equal(kept.properties.plan, 'pro', 'with main_distinct_id the properties stay');
  const anon = (await personOf(db, tenant.project.id, ANON))!;
  t.not(anon.id, alice.id);
  t.same(anon.properties, {});
  const events = await storedEvents(db, tenant.project.id);
  t.same(
    events.filter((e) => e.distinct_id === ANON).map((e) => e.person_id),
    [anon.id],
    'the anonymous pageview moved',
  );
  t.ok(events.filter((e) => e.distinct_id === 'alice').every((e) => e.person_id === alice.id));
  const unknown = await call('persons_split_create', {
    key: tenant.key,
    params: { ...params, id: alice.id },
    body: { main_distinct_id: 'bob' },
  });
  t.equal(unknown.status, 400, "main_distinct_id must be one of the person's");
});

t.test('split without main_distinct_id keeps the first id and clears the properties, as PostHog', async (t) => {
  const { tenant, params, alice } = await seeded();
  t.equal((await call('persons_split_create', { key: tenant.key, params: { ...params, id: alice.uuid } })).status, 201);
  const kept = json<'persons_retrieve'>(
    await call('persons_retrieve', { key: tenant.key, params: { ...params, id: alice.id } }),
  );
  t.equal(kept.distinct_ids.length, 1);
  t.same(kept.properties, {});
  const page = json<'persons_list'>(await call('persons_list', { key: tenant.key, params }));
  t.equal(page.count, 4, 'one new person');
});

t.test('format=csv: PostHog’s paginated CSV renderer, every matching person in one answer', async (t) => {
  const { tenant, params, alice, bob, carol } = await seeded();
  const at = (p: { created_at: Date }) => p.created_at.toISOString();
  // Worked out by hand: every column any person has, sorted, lists and objects opened into dotted columns.
  const header =
    'created_at,distinct_ids.0,distinct_ids.1,id,name,' +
    'properties.age,properties.email,properties.name,properties.plan,uuid';
  const rows = {
    carol: `${at(carol)},carol,,${carol.id},carol,,,,,${carol.uuid}`,
    bob: `${at(bob)},bob,,${bob.id},Bob,25,,Bob,free,${bob.uuid}`,
    alice: `${at(alice)},alice,${ANON},${alice.id},alice@example.com,31,alice@example.com,,pro,${alice.uuid}`,
  };
  const csv = await call('persons_list', { key: tenant.key, params, query: { format: 'csv', limit: 1, offset: 1 } });
  t.equal(csv.status, 200);
  t.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
  t.equal(
    csv.raw,
    `${header}\r\n${rows.carol}\r\n${rows.bob}\r\n${rows.alice}\r\n`,
    'all three, newest first: a CSV is not a page',
  );
  const accepted = await call('persons_list', { key: tenant.key, params, headers: { accept: 'text/csv' } });
  t.equal(accepted.raw, csv.raw, 'Accept: text/csv selects it too');
  const preferJson = await call('persons_list', {
    key: tenant.key,
    params,
    headers: { accept: 'text/csv, application/json' },
  });
  t.equal(preferJson.body.count, 3, 'JSON first among equally specific types, as DRF negotiates');
  const filtered = await call('persons_list', { key: tenant.key, params, query: { format: 'csv', search: 'bo' } });
  t.equal(
    filtered.raw,
    `created_at,distinct_ids.0,id,name,properties.age,properties.name,properties.plan,uuid\r\n` +
      `${at(bob)},bob,${bob.id},Bob,25,Bob,free,${bob.uuid}\r\n`,
    'filters apply; the columns are those of the rows sent',
  );
  const one = await call('persons_retrieve', {
    key: tenant.key,
    params: { ...params, id: alice.uuid },
    query: { format: 'csv' },
  });
  t.equal(
    one.raw,
    'created_at,distinct_ids.0,distinct_ids.1,id,name,properties.age,properties.email,properties.plan,uuid\r\n' +
      `${at(alice)},alice,${ANON},${alice.id},alice@example.com,31,alice@example.com,pro,${alice.uuid}\r\n`,
    'a retrieve is one row',
  );
  const split = await call('persons_split_create', {
    key: tenant.key,
    params: { ...params, id: carol.id },
    query: { format: 'csv' },
  });
  t.equal(split.status, 201);
  t.equal(split.raw, 'success\r\nTrue\r\n', 'Python writes true as True');
  const json404 = await call('persons_retrieve', {
    key: tenant.key,
    params: { ...params, id: 999999 },
    query: { format: 'csv' },
  });
  t.match(json404, {
    status: 404,
    headers: { 'content-type': /^application\/json/ },
    body: { type: 'invalid_request' },
  });
  const other = await makeTenant(db);
  const walled = await call('persons_list', {
    key: other.key,
    params: { project_id: other.project.id },
    query: { format: 'csv' },
  });
  t.equal(walled.raw, '', "another project's CSV holds none of these persons (no rows, no header)");
  const foreign = await call('persons_retrieve', {
    key: other.key,
    params: { project_id: other.project.id, id: alice.id },
    query: { format: 'csv' },
  });
  t.equal(foreign.status, 404);
  const bad = await call('persons_list', { key: tenant.key, params, query: { format: 'xml' } });
  t.match(bad, { status: 400, body: { code: 'invalid_choice', attr: 'format' } });
});
