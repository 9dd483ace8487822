import t from 'tap';
import { queryFixture } from './query-fixture.js';

const { call, a, b, params, ann, bob, rows, hogql, results } = await queryFixture(t);

t.test('HogQLQuery: counts by event, in PostHog shape', async (t) => {
  const res = await hogql('select event, count() from events group by event order by event');
  t.equal(res.status, 200);
  t.same(res.body.results, [
    ['$pageview', 2],
    ['signup', 2],
  ]);
  t.same(res.body.columns, ['event', 'count()']);
  t.same(res.body.types, [
    ['event', 'String'],
    ['count()', 'UInt64'],
  ]);
  t.match(res.body, { limit: 100, offset: 0, hasMore: false });
  t.equal(res.body.hogql, 'SELECT event, count() FROM events GROUP BY event ORDER BY event ASC LIMIT 100');
  const env = await hogql('select count() from events', {}, a.key, 'environments_query_create');
  t.same([env.status, env.body.results], [200, [[4]]], 'the environments route is the same operation');
  const current = await call('query_create', {
    key: a.key,
    params: { project_id: '@current' },
    body: { query: { kind: 'HogQLQuery', query: 'select count() from events' } },
  });
  t.same(current.body.results, [[4]], '@current works');
  const agent = await call('query_create', {
    key: a.key,
    params,
    body: {
      query: {
        kind: 'HogQLQuery',
        query: 'SELECT event, count() FROM events GROUP BY event ORDER BY count() DESC LIMIT 10',
      },
      refresh: 'blocking',
      client_query_id: 'abc',
      name: 'x',
    },
  });
  t.equal(agent.status, 200, 'the request the agent toolkit sends');
});

t.test('HogQLQuery: fields, properties, persons and functions', async (t) => {
  t.same(
    await results(
      "select properties.$browser, properties['price'], properties.nested.k from events where event = 'signup' order " +
        'by timestamp',
    ),
    [
      ['Chrome', '12', 'v'],
      ['Firefox', '7.5', null],
    ],
  );
  t.same(
    await results(
      'select person.properties.plan, count() from events group by 1 order by 1 nulls'.replace(' nulls', ''),
    ),
    [
      ['free', 1],
      ['pro', 2],
      [null, 1],
    ],
  );
  t.same(
    await results(
      'select sum(properties.price), avg(properties.price), max(properties.price), min(timestamp) from events',
    ),
    [[19.5, 9.75, 'n/a', '2024-05-01T10:00:00.000000Z']],
  );
  t.same(await results('select properties.price > 10, properties.price * 2 from events order by timestamp limit 3'), [
    [true, 24],
    [false, 15],
    [null, null],
  ]);
  t.same(
    await results(
      'select toDate(timestamp) as d, toStartOfDay(timestamp), toStartOfHour(timestamp), toStartOfMonth(timestamp), ' +
        "toStartOfWeek(timestamp) from events where event = 'signup' and properties.$browser = 'Firefox'",
    ),
    [['2024-05-01', '2024-05-01T00:00:00.000000Z', '2024-05-01T11:00:00.000000Z', '2024-05-01', '2024-04-28']],
  );
  // An event without a person counts as one of its distinct id, as PostHog's personless events do.
  t.same(await results("select uniq(distinct_id), countIf(event = 'signup'), count(distinct person_id) from events"), [
    [4, 2, 3],
  ]);
  t.same(
    await results(
      "select count() from events where timestamp > toDateTime('2024-05-01 11:00:00') - interval 1 hour and " +
        'timestamp < now()',
    ),
    [[3]],
  );
  t.same(
    await results(
      "select if(properties.$browser = 'Chrome', 'c', 'other') as b, coalesce(properties.$session_id, 'none') from " +
        'events order by timestamp',
    ),
    [
      ['c', 'none'],
      ['other', 'none'],
      ['c', 's1'],
      ['other', 'none'],
    ],
  );
  t.same(
    await results(
      "select event from events where distinct_id in ('ann', 'bob') and event like 'sign%' and not (event ilike " +
        "'X%') order by timestamp",
    ),
    [['signup'], ['signup']],
  );
  t.same(
    await results(
      "select JSONExtractString(properties, 'nested', 'k'), JSONExtractInt(properties, 'price') from events order by " +
        'timestamp limit 1',
    ),
    [['v', 12]],
  );
  t.same(await results('select 1 + 2, 7 / 2, 5 % 3, 1 / 0, -(2)'), [[3, 3.5, 2, null, -2]]);
  t.same(await results('select count(), countIf(properties.$browser is null) from events having count() > 1'), [
    [4, 1],
  ]);
  const joined = await hogql(
    'select e.event, p.properties.email from events e join persons p on e.person_id = p.id where p.properties.plan = ' +
      "'pro' order by e.timestamp",
  );
  t.same(joined.body.columns, ['event', 'p.properties.email'], 'fields are named as PostHog names them');
  t.same(joined.body.results, [
    ['signup', 'ann@x.io'],
    ['$pageview', 'ann@x.io'],
  ]);
  t.same(
    await results(
      'select d.distinct_id, p.id = d.person_id from person_distinct_ids d left join persons p on p.id = d.person_id ' +
        'order by 1',
    ),
    [
      ['ann', true],
      ['ann-2', true],
      ['bob', true],
    ],
  );
  t.same(
    await results(
      'select n, c from (select event as n, count() as c from events group by event) where c > 1 order by n desc',
    ),
    [
      ['signup', 2],
      ['$pageview', 2],
    ],
  );
  t.same(
    await results(
      'select count() from events where person_id in (select id from persons where properties.plan = {plan})',
      { values: { plan: 'pro' } },
    ),
    [[2]],
  );
  t.same(
    await results('select count() from events where distinct_id in {ids} and properties.price > {min}', {
      values: { ids: ['ann', 'bob'], min: 10 },
    }),
    [[1]],
  );
  const star = await hogql("select * from events where event = 'signup' order by timestamp limit 1");
  t.same(star.body.columns, [
    'uuid',
    'event',
    'properties',
    'timestamp',
    'distinct_id',
    'elements_chain',
    'created_at',
    'person_id',
  ]);
  t.same(star.body.results[0].slice(0, 5), [
    rows[0]!.uuid,
    'signup',
    JSON.stringify({ price: 12, nested: { k: 'v' }, $browser: 'Chrome' }).length ? star.body.results[0][2] : '',
    '2024-05-01T10:00:00.000000Z',
    'ann',
  ]);
  t.same(
    JSON.parse(star.body.results[0][2]),
    { price: 12, nested: { k: 'v' }, $browser: 'Chrome' },
    'properties as JSON text',
  );
  t.equal(star.body.results[0][7], ann.uuid, 'person_id is the person uuid');
  t.same(
    star.body.types.map((x: string[]) => x[1]),
    ['UUID', 'String', 'String', "DateTime64(6, 'UTC')", 'String', 'String', "DateTime64(6, 'UTC')", 'UUID'],
  );
});

t.test('limits, offset and hasMore', async (t) => {
  const page = await hogql('select event from events order by timestamp limit 2 offset 1');
  t.same(
    [page.body.results, page.body.hasMore, page.body.limit, page.body.offset],
    [[['signup'], ['$pageview']], true, 2, 1],
  );
  const last = await hogql('select event from events order by timestamp limit 2 offset 3');
  t.same([last.body.results.length, last.body.hasMore], [1, false]);
  const big = await hogql('select event from events limit 1000000');
  t.same([big.status, big.body.limit], [200, 50000], 'clamped to PostHog maximum (MAX_SELECT_RETURNED_ROWS)');
  t.match(big.body.hogql, /LIMIT 50000$/);
});

t.test('EventsQuery', async (t) => {
  const events = (query: Record<string, unknown>) =>
    call('query_create', { key: a.key, params, body: { query: { kind: 'EventsQuery', ...query } } });
  const res = await events({
    select: ['*', 'event', 'properties.$browser -- Browser', 'person'],
    where: ["event = 'signup'"],
    orderBy: ['timestamp ASC'],
  });
  t.equal(res.status, 200);
  t.same(res.body.columns, ['*', 'event', 'properties.$browser -- Browser', 'person']);
  t.equal(res.body.types[1], 'String');
  t.equal(res.body.results.length, 2);
  const [first] = res.body.results as unknown as [unknown[]];
  t.match(first[0], {
    uuid: rows[0]!.uuid,
    event: 'signup',
    distinct_id: 'ann',
    properties: { $browser: 'Chrome' },
    timestamp: '2024-05-01T10:00:00.000000Z',
    team_id: a.project.id,
  });
  t.same(first.slice(1, 3), ['signup', 'Chrome']);
  t.match(first[3], { id: ann.uuid, properties: { plan: 'pro' }, distinct_id: 'ann' });
  const filtered = await events({
    select: ['event', 'distinct_id'],
    event: '$pageview',
    after: '2024-05-02T00:00:00Z',
    properties: [{ key: '$browser', value: 'chrome', operator: 'icontains', type: 'event' }],
  });
  t.same(filtered.body.results, [['$pageview', 'ann-2']]);
  const persons = await events({
    select: ['distinct_id'],
    properties: [{ key: 'plan', value: ['pro'], type: 'person' }],
    orderBy: ['distinct_id'],
  });
  t.same(persons.body.results, [['ann'], ['ann-2']]);
  const grouped = await events({
    select: ['event', 'count()'],
    orderBy: ['count() DESC', 'event'],
    before: '2024-05-03T00:00:00Z',
  });
  t.same(grouped.body.results, [
    ['signup', 2],
    ['$pageview', 1],
  ]);
  t.same(grouped.body.types, ['String', 'UInt64']);
  const paged = await events({ select: ['event'], limit: 1, offset: 1 });
  t.same([paged.body.results, paged.body.hasMore], [[['$pageview']], true], 'newest first by default');
  const person = await events({ select: ['event'], personId: bob.uuid });
  t.same(person.body.results, [['signup']]);
  const bad = await events({ select: ['event'], where: ['nope = 1'] });
  t.same([bad.status, bad.body.attr], [400, null]);
  t.match(bad.body.detail, /Unable to resolve field: nope/);
  const noSelect = await call('query_create', { key: a.key, params, body: { query: { kind: 'EventsQuery' } } });
  t.same([noSelect.status, noSelect.body.attr, noSelect.body.code], [400, 'query__select', 'required']);
  const badAfter = await events({ select: ['event'], after: 'yesterday-ish' });
  t.same([badAfter.status, badAfter.body.attr], [400, 'after']);
  const badFilter = await events({ select: ['event'], properties: [{ key: 'x', operator: 'nope', value: 1 }] });
  t.same([badFilter.status, badFilter.body.attr], [400, 'properties']);
});
