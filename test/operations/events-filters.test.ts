import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { capture, iso } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const T0 = Date.parse('2024-06-01T12:00:00Z');

const a = await makeTenant(db);
const b = await makeTenant(db);
// Each event's name says what it holds; `u1` and `u2` have person properties, `anon` has none.
await capture(ctx, a.project.api_token, [
  {
    event: 'chrome',
    distinct_id: 'u1',
    timestamp: iso(T0),
    properties: { browser: 'Chrome', n: 10, signup: '2024-01-15', $set: { plan: 'pro', age: 30 } },
  },
  {
    event: 'firefox',
    distinct_id: 'u2',
    timestamp: iso(T0 + 1),
    properties: { browser: 'Firefox', n: '5', signup: '2024-03-01T10:00:00Z', $set: { plan: 'free' } },
  },
  {
    event: 'safari',
    distinct_id: 'anon',
    timestamp: iso(T0 + 2),
    properties: { browser: 'Safari 100%', n: 2.5, flag: true, signup: 'not a date' },
  },
  { event: 'bare', distinct_id: 'anon', timestamp: iso(T0 + 3), properties: { n: null } },
]);
await capture(ctx, b.project.api_token, [
  { event: 'other project', distinct_id: 'u1', properties: { browser: 'Chrome' } },
]);

async function matching(properties: unknown): Promise<string[]> {
  const res = await call('events_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: {
      properties: typeof properties === 'string' ? properties : JSON.stringify(properties),
      orderBy: '["timestamp"]',
    },
  });
  if (res.status !== 200) throw new Error(`${res.status} ${res.raw}`);
  return res.body.results.map((e: any) => e.event);
}

t.test('each operator', async (t) => {
  const cases: [string, unknown, string[]][] = [
    ['exact (default)', [{ key: 'browser', value: 'Chrome' }], ['chrome']],
    ['exact with a list', [{ key: 'browser', value: ['Chrome', 'Firefox'], operator: 'exact' }], ['chrome', 'firefox']],
    ['exact number matches number and text', [{ key: 'n', value: 5, operator: 'exact' }], ['firefox']],
    ['exact number as text', [{ key: 'n', value: '10', operator: 'exact' }], ['chrome']],
    ['exact boolean', [{ key: 'flag', value: true }], ['safari']],
    [
      'is_not includes events without the property',
      [{ key: 'browser', value: 'Chrome', operator: 'is_not' }],
      ['firefox', 'safari', 'bare'],
    ],
    ['icontains', [{ key: 'browser', value: 'FIRE', operator: 'icontains' }], ['firefox']],
    ['icontains escapes wildcards', [{ key: 'browser', value: '100%', operator: 'icontains' }], ['safari']],
    ['not_icontains', [{ key: 'browser', value: 'o', operator: 'not_icontains' }], ['safari', 'bare']],
    ['regex', [{ key: 'browser', value: '^(Chr|Saf)', operator: 'regex' }], ['chrome', 'safari']],
    ['not_regex', [{ key: 'browser', value: 'fox$', operator: 'not_regex' }], ['chrome', 'safari', 'bare']],
    ['gt compares numbers, numeric text too', [{ key: 'n', value: 4, operator: 'gt' }], ['chrome', 'firefox']],
    ['gte', [{ key: 'n', value: '5', operator: 'gte' }], ['chrome', 'firefox']],
    ['lt', [{ key: 'n', value: 5, operator: 'lt' }], ['safari']],
    ['lte', [{ key: 'n', value: 5, operator: 'lte' }], ['firefox', 'safari']],
    ['is_set ignores null', [{ key: 'n', operator: 'is_set' }], ['chrome', 'firefox', 'safari']],
    ['is_not_set counts null', [{ key: 'n', operator: 'is_not_set' }], ['bare']],
    ['is_not_set when absent', [{ key: 'flag', operator: 'is_not_set' }], ['chrome', 'firefox', 'bare']],
    ['is_date_before', [{ key: 'signup', value: '2024-02-01', operator: 'is_date_before' }], ['chrome']],
    ['is_date_after', [{ key: 'signup', value: '2024-02-01T00:00:00+01:00', operator: 'is_date_after' }], ['firefox']],
    ['is_date_exact', [{ key: 'signup', value: '2024-03-01T10:00:00Z', operator: 'is_date_exact' }], ['firefox']],
    ['person properties', [{ key: 'plan', value: 'pro', type: 'person' }], ['chrome']],
    [
      'person is_not includes events without a person property',
      [{ key: 'plan', value: 'pro', type: 'person', operator: 'is_not' }],
      ['firefox', 'safari', 'bare'],
    ],
    ['person gt', [{ key: 'age', value: 18, operator: 'gt', type: 'person' }], ['chrome']],
    [
      'all filters must hold',
      [
        { key: 'browser', value: 'o', operator: 'icontains' },
        { key: 'plan', value: 'free', type: 'person' },
      ],
      ['firefox'],
    ],
    [
      'OR group',
      {
        type: 'OR',
        values: [
          { key: 'browser', value: 'Chrome' },
          { key: 'flag', operator: 'is_set' },
        ],
      },
      ['chrome', 'safari'],
    ],
    [
      'nested groups',
      {
        type: 'AND',
        values: [
          {
            type: 'OR',
            values: [
              { key: 'n', value: 3, operator: 'gt' },
              { key: 'flag', value: true },
            ],
          },
          { key: 'browser', value: 'Chrome', operator: 'is_not' },
        ],
      },
      ['firefox', 'safari'],
    ],
    ['a single filter object', { key: 'browser', value: 'Safari 100%' }, ['safari']],
    ['empty list', [], ['chrome', 'firefox', 'safari', 'bare']],
  ];
  for (const [name, filters, expected] of cases) t.same(await matching(filters), expected, name);
});

t.test('bad filters are a 400 on properties', async (t) => {
  const bad: [unknown, RegExp][] = [
    ['not json', /^Properties are unparsable!$/],
    ['"a string"', /^Properties are unparsable!$/],
    [[{ value: 'x' }], /needs a "key"/],
    [[{ key: 'a', value: 'x', type: 'cohort' }], /type "cohort" is not supported; supported types: event, person/],
    [[{ key: 'a', value: 'x', operator: 'between' }], /Operator "between" is not supported/],
    [[{ key: 'a', operator: 'exact' }], /needs a value/],
    [[{ key: 'a', value: { x: 1 } }], /needs a value/],
    [[{ key: 'a', value: 'ten', operator: 'gt' }], /needs a number/],
    [[{ key: 'a', value: 'soon', operator: 'is_date_before' }], /needs an ISO 8601 date/],
    [[{ key: 'a', value: ['x', 'y'], operator: 'icontains' }], /single value/],
    [[{ type: 'OR', values: 'x' }], /needs a list of "values"/],
    [[{ key: 'browser', value: '(', operator: 'regex' }], /Invalid regular expression/],
  ];
  for (const [filters, detail] of bad) {
    const res = await call('events_list', {
      key: a.key,
      params: { project_id: a.project.id },
      query: { properties: typeof filters === 'string' ? filters : JSON.stringify(filters) },
    });
    t.match(res, { status: 400, body: { type: 'validation_error', attr: 'properties', detail } }, String(detail));
  }
});
