// A hog function's filters compiled as PostHog compiles them (exact bytecode worked out by hand from its
// operations), then run on sample events built as PostHog's plugin server builds its filter globals.
import t from 'tap';
import { compileFilters, filterGlobals, matchesFilters } from '../../src/hog/filters.js';

// STRING=32 GET_GLOBAL=1 CALL_GLOBAL=2 AND=3 OR=4 EQ=11 NOT_EQ=12 ILIKE=18 NOT_ILIKE=20 IN=21 TRUE=29 NULL=31 TUPLE=44
t.test('bytecode of each filter shape', async (t) => {
  t.same((await compileFilters({})).bytecode, ['_H', 1, 29], 'no filters: true');
  t.same((await compileFilters({ events: [{ id: null, type: 'events', name: 'All events' }] })).bytecode, [
    '_H',
    1,
    29,
  ]);
  t.same((await compileFilters({ events: [{ id: 'signup', type: 'events' }] })).bytecode, [
    '_H',
    1,
    32,
    'signup',
    32,
    'event',
    1,
    1,
    11,
  ]);
  const withProps = await compileFilters({
    events: [
      {
        id: '$pageview',
        type: 'events',
        properties: [{ key: '$browser', value: 'fox', operator: 'icontains', type: 'event' }],
      },
    ],
  });
  t.same(withProps.bytecode, [
    '_H',
    1,
    32,
    '$pageview',
    32,
    'event',
    1,
    1,
    11,
    32,
    '%fox%',
    32,
    '$browser',
    32,
    'properties',
    1,
    2,
    2,
    'toString',
    1,
    18,
    3,
    2,
  ]);
  const global = await compileFilters(
    {
      properties: [
        { key: 'plan', value: ['pro', 'team'], operator: 'exact', type: 'person' },
        { key: '$lib', operator: 'is_set', value: 'is_set', type: 'event' },
      ],
      events: [
        { id: 'a', type: 'events' },
        { id: 'b', type: 'events' },
      ],
      filter_test_accounts: true,
    },
    { testAccountFilters: [{ key: 'email', value: '@example.com', operator: 'not_icontains', type: 'person' }] },
  );
  t.same(
    global.bytecode,
    [
      '_H',
      1,
      // test accounts: toString(person.properties.email) not ilike '%@example.com%'
      32,
      '%@example.com%',
      32,
      'email',
      32,
      'properties',
      32,
      'person',
      1,
      3,
      2,
      'toString',
      1,
      20,
      // person.properties.plan in ('pro', 'team')
      32,
      'pro',
      32,
      'team',
      44,
      2,
      32,
      'plan',
      32,
      'properties',
      32,
      'person',
      1,
      3,
      21,
      // properties.$lib != null
      31,
      32,
      '$lib',
      32,
      'properties',
      1,
      2,
      12,
      // event = 'a' or event = 'b'
      32,
      'a',
      32,
      'event',
      1,
      1,
      11,
      32,
      'b',
      32,
      'event',
      1,
      1,
      11,
      4,
      2,
      3,
      4,
    ],
    'test accounts AND properties AND (events)',
  );
});

const testAccountFilters = [{ key: 'email', value: '@example.com', operator: 'not_icontains', type: 'person' }];

t.test('compiled filters run on events', async (t) => {
  const filters = {
    events: [
      {
        id: '$pageview',
        type: 'events',
        properties: [{ key: '$current_url', value: '/docs', operator: 'icontains', type: 'event' }],
      },
      { id: 'purchase', type: 'events', properties: [{ key: 'amount', value: 100, operator: 'gte', type: 'event' }] },
    ],
    properties: [{ key: 'plan', value: ['pro', 'team'], operator: 'exact', type: 'person' }],
    filter_test_accounts: true,
  };
  const { bytecode, bytecode_error } = await compileFilters(filters, { testAccountFilters });
  t.equal(bytecode_error, undefined);
  const person = (plan: string, email = 'a@customer.io') => ({ id: 'p1', properties: { plan, email } });
  const cases: [string, Parameters<typeof filterGlobals>, boolean][] = [
    [
      'docs pageview, pro',
      [{ event: '$pageview', properties: { $current_url: 'https://x.io/DOCS/a' } }, person('pro')],
      true,
    ],
    ['other page', [{ event: '$pageview', properties: { $current_url: 'https://x.io/blog' } }, person('pro')], false],
    ['free plan', [{ event: '$pageview', properties: { $current_url: 'https://x.io/docs' } }, person('free')], false],
    ['big purchase, team', [{ event: 'purchase', properties: { amount: 250 } }, person('team')], true],
    ['small purchase', [{ event: 'purchase', properties: { amount: 20 } }, person('team')], false],
    ['test account', [{ event: 'purchase', properties: { amount: 250 } }, person('team', 'me@example.com')], false],
    ['other event', [{ event: 'signup', properties: {} }, person('pro')], false],
    ['no person', [{ event: 'purchase', properties: { amount: 250 } }, null], false],
  ];
  for (const [name, args, expected] of cases) {
    const res = matchesFilters(bytecode!, filterGlobals(...args));
    t.same(res, { match: expected }, name);
  }
});

t.test('operators on sample events', async (t) => {
  const match = async (property: Record<string, unknown>, properties: Record<string, unknown>) => {
    const { bytecode, bytecode_error } = await compileFilters({ properties: [{ type: 'event', ...property }] });
    if (!bytecode) throw new Error(bytecode_error);
    return matchesFilters(bytecode, filterGlobals({ event: 'e', properties })).match;
  };
  t.equal(await match({ key: 'a', value: 'x', operator: 'is_not' }, { a: 'y' }), true);
  t.equal(await match({ key: 'a', value: ['x', 'y'], operator: 'is_not' }, { a: 'y' }), false);
  t.equal(await match({ key: 'a', value: '^ab+$', operator: 'regex' }, { a: 'abbb' }), true);
  t.equal(await match({ key: 'a', value: '^ab+$', operator: 'not_regex' }, { a: 'abbb' }), false);
  t.equal(await match({ key: 'a', value: 5, operator: 'lt' }, { a: 4 }), true);
  t.equal(await match({ key: 'a', value: [1, 10], operator: 'between' }, { a: 11 }), false);
  t.equal(await match({ key: 'a', value: [1, 10], operator: 'not_between' }, { a: 11 }), true);
  t.equal(await match({ key: 'a', operator: 'is_not_set' }, {}), true);
  t.equal(await match({ key: 'a', value: ['x', 'y'], operator: 'icontains' }, { a: 'aXb' }), true, 'multi icontains');
  t.equal(await match({ key: 'v', value: '1.2.0', operator: 'semver_gte' }, { v: '1.10.1' }), true);
  t.equal(await match({ key: 'v', value: '1.2.3', operator: 'semver_caret' }, { v: '1.9.0' }), true);
  t.equal(await match({ key: 'v', value: '1.2.3', operator: 'semver_tilde' }, { v: '1.3.0' }), false);
  t.equal(
    await match({ key: 'd', value: '2024-01-01', operator: 'is_date_after' }, { d: '2024-03-01T10:00:00Z' }),
    true,
  );
  t.equal(await match({ key: 'length(properties.s) > 3', type: 'hogql' }, { s: 'abcd' }), true, 'HogQL filter');
});

t.test('filters PostHog refuses answer a bytecode_error', async (t) => {
  const cohort = await compileFilters({ properties: [{ key: 'id', value: 3, type: 'cohort' }] });
  t.same(cohort.bytecode, null);
  t.match(cohort.bytecode_error, /Cohort membership can't be evaluated in real-time filters/);
  const select = await compileFilters({ properties: [{ key: '(select 1)', type: 'hogql' }] });
  t.match(select.bytecode_error, /Select queries are not allowed in filters|not supported/);
  const unknown = await compileFilters({ properties: [{ key: 'nope(1)', type: 'hogql' }] });
  t.equal(unknown.bytecode_error, 'Filter compilation errors: Hog function `nope` is not implemented');
  const between = await compileFilters({ properties: [{ key: 'a', value: [5, 1], operator: 'between' }] });
  t.match(between.bytecode_error, /min value to be less than or equal to max value/);
  const invalid = await compileFilters({ properties: [{ value: 'x' }] });
  t.same(invalid.bytecode, ['_H', 1, 33, 1], 'a filter without a key is left out, as PostHog');
});

t.test('nested keys of activity log events', async (t) => {
  const { bytecode } = await compileFilters({
    events: [{ id: '$activity_log_entry_created', type: 'events' }],
    properties: [{ key: 'detail.name', value: 'cheese', operator: 'icontains', type: 'event' }],
  });
  const event = (name: string) => ({ event: '$activity_log_entry_created', properties: { detail: { name } } });
  t.equal(matchesFilters(bytecode!, filterGlobals(event('blue cheese'))).match, true);
  t.equal(matchesFilters(bytecode!, filterGlobals(event('bread'))).match, false);
});
