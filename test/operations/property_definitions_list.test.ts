import t from 'tap';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { capture } from '../helpers/events.js';
import { ctx, call, db, list, names, event, seeded } from '../helpers/property-definitions-app.js';

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
