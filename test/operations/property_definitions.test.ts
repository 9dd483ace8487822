import t from 'tap';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { capture } from '../helpers/events.js';
import { ctx, call, db, NOT_FOUND, list, names, event, seeded } from '../helpers/property-definitions-app.js';

t.test('property_definitions_retrieve', async (t) => {
  const a = await seeded();
  const b = await seeded();
  const [amount] = await list(a, { properties: 'amount' });
  const [theirs] = await list(b, { properties: 'amount' });
  const res = await call('property_definitions_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: amount!.id },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    id: amount!.id,
    name: 'amount',
    property_type: 'Numeric',
    is_seen_on_filtered_events: null,
    updated_by: null,
    verified_by: null,
  });
  const cross = await call('property_definitions_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: theirs!.id },
  });
  t.same(cross.body, NOT_FOUND, "another project's definition id on my project's path is a 404");
  t.equal(
    (await call('property_definitions_retrieve', { key: a.key, params: { project_id: b.project.id, id: theirs!.id } }))
      .status,
    403,
  );
  t.same(
    (
      await call('property_definitions_retrieve', {
        key: a.key,
        params: { project_id: a.project.id, id: 'not-a-uuid' },
      })
    ).body,
    NOT_FOUND,
  );
  t.equal(
    (await call('property_definitions_retrieve', { params: { project_id: a.project.id, id: amount!.id } })).status,
    401,
  );
  t.equal(
    (
      await call('property_definitions_retrieve', {
        key: await makeKey(db, a.user, ['dashboard:read']),
        params: { project_id: a.project.id, id: amount!.id },
      })
    ).status,
    403,
  );
});

t.test('property_definitions_partial_update', async (t) => {
  const a = await seeded();
  const b = await seeded();
  const [plan] = await list(a, { properties: 'plan' });
  const [theirs] = await list(b, { properties: 'plan' });
  const member = await makeMember(db, a, 1);
  const params = { project_id: a.project.id, id: plan!.id };
  const res = await call('property_definitions_partial_update', {
    key: member.key,
    params,
    body: {
      description: 'The plan',
      tags: [' Billing', 'billing', 'Core'],
      property_type: 'Numeric',
      verified: true,
      name: 'renamed',
      is_numerical: false,
    },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    name: 'plan',
    description: 'The plan',
    tags: ['billing', 'core'],
    property_type: 'Numeric',
    is_numerical: true,
    verified: true,
    verified_by: { id: member.user.id },
    updated_by: { id: member.user.id },
  });
  t.ok(res.body.verified_at);
  const hidden = await call('property_definitions_partial_update', {
    key: a.key,
    params,
    body: { hidden: true, property_type: 'String' },
  });
  t.match(hidden.body, {
    hidden: true,
    verified: false,
    verified_at: null,
    verified_by: null,
    property_type: 'String',
    is_numerical: false,
  });
  t.notOk(
    names(await list(a, { exclude_hidden: true })).includes('plan'),
    'a hidden definition is left out on request',
  );
  t.ok(names(await list(a)).includes('plan'));

  const both = await call('property_definitions_partial_update', {
    key: a.key,
    params,
    body: { hidden: true, verified: true },
  });
  t.same(both.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'A property cannot be both hidden and verified',
    attr: null,
  });
  const badType = await call('property_definitions_partial_update', {
    key: a.key,
    params,
    body: { property_type: 'Date' },
  });
  t.match(badType.body, { code: 'invalid_choice', attr: 'property_type' });
  const badTags = await call('property_definitions_partial_update', { key: a.key, params, body: { tags: 'x' } });
  t.match(badTags.body, { type: 'validation_error', attr: 'tags' });
  const after = await call('property_definitions_retrieve', { key: a.key, params });
  t.match(after.body, { property_type: 'String', hidden: true }, 'refused requests changed nothing');

  const cross = await call('property_definitions_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: theirs!.id },
    body: { description: 'mine now' },
  });
  t.same(cross.body, NOT_FOUND);
  const untouched = await call('property_definitions_retrieve', {
    key: b.key,
    params: { project_id: b.project.id, id: theirs!.id },
  });
  t.equal(untouched.body.description, null, "another project's definition is unchanged");
  t.equal(
    (
      await call('property_definitions_partial_update', {
        key: a.key,
        params: { project_id: b.project.id, id: theirs!.id },
        body: {},
      })
    ).status,
    403,
  );
  const readOnly = await makeKey(db, a.user, ['property_definition:read']);
  t.equal((await call('property_definitions_partial_update', { key: readOnly, params, body: {} })).status, 403);
  t.equal((await call('property_definitions_partial_update', { params, body: {} })).status, 401);
});

t.test('property_definitions_update (PUT)', async (t) => {
  const a = await seeded();
  const b = await seeded();
  const [amount] = await list(a, { properties: 'amount' });
  const [theirs] = await list(b, { properties: 'amount' });
  const params = { project_id: a.project.id, id: amount!.id };
  const first = await call('property_definitions_update', {
    key: a.key,
    params,
    body: { description: 'Order value', tags: ['Money'] },
  });
  t.match(first.body, { description: 'Order value', tags: ['money'], updated_by: { id: a.user.id } });
  const second = await call('property_definitions_update', { key: a.key, params, body: { verified: true } });
  t.match(
    second.body,
    { description: 'Order value', tags: ['money'], verified: true },
    'fields left out keep their values',
  );
  const both = await call('property_definitions_update', {
    key: a.key,
    params,
    body: { verified: true, hidden: true },
  });
  t.equal(both.body.detail, 'A property cannot be both hidden and verified');
  const bad = await call('property_definitions_update', { key: a.key, params, body: { property_type: 'Money' } });
  t.match(bad.body, { type: 'validation_error', attr: 'property_type' });
  const cross = await call('property_definitions_update', {
    key: a.key,
    params: { project_id: a.project.id, id: theirs!.id },
    body: { description: 'x' },
  });
  t.same(cross.body, NOT_FOUND);
  t.equal(
    (
      await call('property_definitions_update', {
        key: a.key,
        params: { project_id: b.project.id, id: theirs!.id },
        body: {},
      })
    ).status,
    403,
  );
  const readOnly = await makeKey(db, a.user, ['property_definition:read']);
  t.equal((await call('property_definitions_update', { key: readOnly, params, body: {} })).status, 403);
  t.equal((await call('property_definitions_update', { params, body: {} })).status, 401);
  const [after] = await list(b, { properties: 'amount' });
  t.same(after, theirs, 'another project’s definition is unchanged');
});

t.test('property_definitions_destroy', async (t) => {
  const a = await seeded();
  const b = await seeded();
  const [plan] = await list(a, { properties: 'plan' });
  const [theirs] = await list(b, { properties: 'plan' });
  const readOnly = await makeKey(db, a.user, ['property_definition:read']);
  t.equal(
    (await call('property_definitions_destroy', { key: readOnly, params: { project_id: a.project.id, id: plan!.id } }))
      .status,
    403,
  );
  t.equal(
    (await call('property_definitions_destroy', { params: { project_id: a.project.id, id: plan!.id } })).status,
    401,
  );
  const cross = await call('property_definitions_destroy', {
    key: a.key,
    params: { project_id: a.project.id, id: theirs!.id },
  });
  t.same(cross.body, NOT_FOUND, 'another project’s definition cannot be deleted from my path');
  t.equal(
    (await call('property_definitions_destroy', { key: a.key, params: { project_id: b.project.id, id: theirs!.id } }))
      .status,
    403,
  );
  t.equal((await list(b, { properties: 'plan' })).length, 1);
  const member = await makeMember(db, a, 1);
  const res = await call('property_definitions_destroy', {
    key: member.key,
    params: { project_id: a.project.id, id: plan!.id },
  });
  t.equal(res.status, 204);
  t.same(await list(a, { properties: 'plan' }), []);
  t.equal(
    (await call('property_definitions_retrieve', { key: a.key, params: { project_id: a.project.id, id: plan!.id } }))
      .status,
    404,
  );
  await capture(ctx, a.project.api_token, [event('$pageview', { plan: 'team' })]);
  const [again] = await list(a, { properties: 'plan' });
  t.ok(again && again.id !== plan!.id, 'the next event carrying it defines it afresh');
});

t.test('property_definitions_seen_together_retrieve', async (t) => {
  const a = await seeded();
  const b = await makeTenant(db);
  await capture(ctx, b.project.api_token, [event('signup', { plan: 'x' })]);
  const res = await call('property_definitions_seen_together_retrieve', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { event_names: ['$pageview', 'purchase', 'signup'], property_name: 'plan' },
  });
  t.equal(res.status, 200);
  t.same(res.body, { $pageview: true, purchase: false, signup: false }, 'another project’s events do not count');
  const amount = await call('property_definitions_seen_together_retrieve', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { event_names: 'purchase', property_name: 'amount' },
  });
  t.same(amount.body, { purchase: true });
  const missing = await call('property_definitions_seen_together_retrieve', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { event_names: ['purchase'] },
  });
  t.match(missing.body, { type: 'validation_error', attr: 'property_name' });
  t.equal(
    (
      await call('property_definitions_seen_together_retrieve', {
        params: { project_id: a.project.id },
        query: { event_names: 'a', property_name: 'p' },
      })
    ).status,
    401,
  );
  t.equal(
    (
      await call('property_definitions_seen_together_retrieve', {
        key: a.key,
        params: { project_id: b.project.id },
        query: { event_names: 'a', property_name: 'p' },
      })
    ).status,
    403,
  );
});
