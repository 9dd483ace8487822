import t from 'tap';
import { randomUUID } from 'node:crypto';
import { detectPropertyType } from '../../src/capture/property-definitions.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant, type Tenant } from '../helpers/factories.js';
import { capture } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const NOT_FOUND = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };

type Def = {
  id: string;
  name: string;
  property_type: string | null;
  is_numerical: boolean;
  is_seen_on_filtered_events: boolean | null;
};

async function list(tenant: Tenant, query: Record<string, string | number | boolean> = {}): Promise<Def[]> {
  const res = await call('property_definitions_list', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    query,
  });
  if (res.status !== 200) throw new Error(`${res.status} ${res.raw}`);
  return res.body.results;
}
const names = (defs: Def[]) => defs.map((d) => d.name);
const event = (name: string, properties: Record<string, unknown>) => ({
  event: name,
  distinct_id: 'd1',
  uuid: randomUUID(),
  properties,
});

/** A project whose events carried a known set of properties. */
async function seeded(): Promise<Tenant> {
  const a = await makeTenant(db);
  const recent = Math.floor(Date.now() / 1000) - 60;
  await capture(ctx, a.project.api_token, [
    event('$pageview', {
      $current_url: 'https://x',
      $browser: 'Chrome',
      utm_source: 42,
      plan: 'pro',
      distinct_id: 'd1',
    }),
    event('purchase', {
      amount: 12.5,
      paid: true,
      verified: 'false',
      created_at: '2024-03-01T10:00:00Z',
      signup_time: recent,
      price: recent,
      note: null,
    }),
    event('purchase', { note: 'late type', $feature_flag_response: true, '$feature/beta': false }),
    event('$identify', { $set: { email: 'a@example.com', age: 31 }, $set_once: { first_seen: '2024-01-01' } }),
  ]);
  return a;
}

t.test('ingestion detects types as PostHog does', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const recent = Math.floor(now / 1000) - 3600;
  const cases: [string, unknown, string | null][] = [
    ['plan', 'pro', 'String'],
    ['amount', 12.5, 'Numeric'],
    ['count', 3, 'Numeric'],
    ['paid', true, 'Boolean'],
    ['flag', ' TRUE ', 'Boolean'],
    ['when', '2024-03-01T10:00:00Z', 'DateTime'],
    ['day', '2024-03-01', 'DateTime'],
    ['eu_day', '01/03/2024 10:00:00', 'DateTime'],
    ['mail_date', 'Fri, 01 Mar 2024 10:00:00 +0000', 'DateTime'],
    ['signup_time', recent, 'DateTime'],
    ['signup_time', 12, 'Numeric'],
    ['price', recent, 'Numeric'],
    ['utm_source', 42, 'String'],
    ['UTM_medium', true, 'String'],
    ['$feature/beta', false, 'String'],
    ['$feature_flag_response', true, 'String'],
    ['$survey_response_2', 5, 'String'],
    ['obj', { a: 1 }, null],
    ['list', [1], null],
    ['none', null, null],
  ];
  for (const [name, value, expected] of cases) {
    t.equal(detectPropertyType(name, value, now), expected, `${name} = ${JSON.stringify(value)}`);
  }
});

t.test('property_definitions_list', async (t) => {
  const a = await seeded();
  const b = await makeTenant(db);
  await capture(ctx, b.project.api_token, [event('secret', { their_prop: 1 })]);

  const all = await list(a);
  const byName = new Map(all.map((d) => [d.name, d]));
  t.same(
    names(all),
    [
      '$browser',
      '$current_url',
      '$feature/beta',
      '$feature_flag_response',
      '$ip',
      'amount',
      'created_at',
      'note',
      'paid',
      'plan',
      'price',
      'signup_time',
      'utm_source',
      'verified',
    ],
    'event properties by name (with the $ip capture adds); distinct_id and $set never listed',
  );
  t.match(byName.get('amount'), {
    property_type: 'Numeric',
    is_numerical: true,
    is_seen_on_filtered_events: null,
    hidden: false,
    tags: [],
  });
  t.match(byName.get('verified'), { property_type: 'Boolean', is_numerical: false });
  t.match(byName.get('created_at'), { property_type: 'DateTime' });
  t.match(byName.get('signup_time'), { property_type: 'DateTime' });
  t.match(byName.get('price'), { property_type: 'Numeric' }, 'a big number is a timestamp only under a date-like name');
  t.match(byName.get('utm_source'), { property_type: 'String' });
  t.match(byName.get('note'), { property_type: 'String' }, 'a first null leaves the type to the next value');
  t.notOk(byName.has('their_prop'), "another project's properties are invisible");

  t.same(names(await list(a, { type: 'person' })), ['age', 'email', 'first_seen']);
  t.match((await list(a, { type: 'person' }))[0], { name: 'age', property_type: 'Numeric' });
  t.same(await list(a, { type: 'session' }), []);
  t.same(names(await list(a, { search: 'feat BETA' })), ['$feature/beta']);
  t.same(names(await list(a, { is_numerical: true })), ['amount', 'price']);
  t.same(names(await list(a, { is_feature_flag: true })), ['$feature/beta']);
  t.notOk(names(await list(a, { is_feature_flag: false })).includes('$feature/beta'));
  t.same(names(await list(a, { exclude_core_properties: true })), [
    'amount',
    'created_at',
    'note',
    'paid',
    'plan',
    'price',
    'signup_time',
    'verified',
  ]);
  t.same(names(await list(a, { properties: 'plan, amount' })), ['amount', 'plan']);
  t.same(names(await list(a, { excluded_properties: '["plan","amount"]', search: 'a' })), [
    '$feature/beta',
    '$feature_flag_response',
    'created_at',
    'paid',
  ]);

  const annotated = await list(a, { event_names: '["$pageview"]' });
  t.same(
    names(annotated.filter((d) => d.is_seen_on_filtered_events)),
    ['$browser', '$current_url', '$ip', 'plan', 'utm_source'],
    'seen ones first',
  );
  t.equal(annotated[0]!.is_seen_on_filtered_events, true);
  t.equal(annotated.at(-1)!.is_seen_on_filtered_events, false);
  t.same(names(await list(a, { event_names: '["purchase"]', filter_by_event_names: true })), [
    '$feature/beta',
    '$feature_flag_response',
    '$ip',
    'amount',
    'created_at',
    'note',
    'paid',
    'price',
    'signup_time',
    'verified',
  ]);
  t.same(
    names(
      await list(a, {
        event_names: '["purchase","$pageview"]',
        filter_by_event_names: true,
        exclude_core_properties: true,
        is_feature_flag: false,
        exclude_hidden: true,
      }),
    ),
    ['amount', 'created_at', 'note', 'paid', 'plan', 'price', 'signup_time', 'verified'],
    'what @posthog/agent-toolkit asks for',
  );
  t.same(names(await list(a, { event_names: '["purchase"]', filter_by_event_names: false })), [
    '$browser',
    '$current_url',
    'plan',
    'utm_source',
  ]);
  t.same(
    await list(a, { event_names: '["secret"]', filter_by_event_names: true }),
    [],
    "another project's events tell nothing",
  );

  const page = await call('property_definitions_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { limit: 2, offset: 2 },
  });
  t.equal(page.body.count, 14);
  t.same(names(page.body.results), ['$feature/beta', '$feature_flag_response']);
  t.match(page.body.next, /offset=4/);

  const badJson = await call('property_definitions_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { event_names: 'purchase' },
  });
  t.match(badJson, { status: 400, body: { type: 'validation_error', attr: 'event_names' } });
  const badType = await call('property_definitions_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { type: 'cohort' },
  });
  t.match(badType, { status: 400, body: { attr: 'type' } });
  const badBool = await call('property_definitions_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { is_numerical: 'maybe' },
  });
  t.match(badBool, { status: 400, body: { attr: 'is_numerical' } });
  t.equal((await call('property_definitions_list', { params: { project_id: a.project.id } })).status, 401);
  t.equal(
    (
      await call('property_definitions_list', {
        key: await makeKey(db, a.user, ['event_definition:read']),
        params: { project_id: a.project.id },
      })
    ).status,
    403,
  );
  t.equal(
    (await call('property_definitions_list', { key: a.key, params: { project_id: b.project.id } })).status,
    403,
    "another organization's project",
  );
  const scoped = await makeKey(db, a.user, ['property_definition:read'], { scoped_teams: [a.project.id] });
  t.equal(
    (await call('property_definitions_list', { key: scoped, params: { project_id: a.project.id } })).status,
    200,
    'a project-scoped key reads its project',
  );
});

t.test('ingestion keeps a type once detected, and stores each definition once', async (t) => {
  const a = await makeTenant(db);
  await capture(ctx, a.project.api_token, [event('e', { n: 1 }), event('e', { n: 'text' })]);
  await capture(ctx, a.project.api_token, [event('e', { n: 'again' }), event('f', { n: true })]);
  const defs = await list(a);
  t.same(
    defs.map((d) => [d.name, d.property_type]),
    [
      ['$ip', 'String'],
      ['n', 'Numeric'],
    ],
  );
  t.same(
    names(await list(a, { event_names: '["f"]', filter_by_event_names: true })),
    ['$ip', 'n'],
    'a new event carrying a known property is linked',
  );
  // Batches that change persons take the other ingestion path; they feed definitions the same way.
  await capture(ctx, a.project.api_token, [event('$set', { $set: { tier: 'gold' }, seen_on_set: 1 })]);
  t.same(names(await list(a, { type: 'person' })), ['tier']);
  t.ok(names(await list(a)).includes('seen_on_set'));
});

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

t.test('NUL in a JSON list of names is refused before any SQL, on its parameter', async (t) => {
  const a = await makeTenant(db);
  for (const param of ['event_names', 'excluded_properties']) {
    const res = await call('property_definitions_list', {
      key: a.key,
      params: { project_id: a.project.id },
      query: { [param]: '["a\\u0000b"]' },
    });
    t.equal(res.status, 400, param);
    t.match(res.body, { code: 'null_characters_not_allowed', attr: param });
  }
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
