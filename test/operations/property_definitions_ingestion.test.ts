import t from 'tap';
import { detectPropertyType } from '../../src/capture/property-definitions.js';
import { makeTenant } from '../helpers/factories.js';
import { capture } from '../helpers/events.js';
import { ctx, db, list, names, event } from '../helpers/property-definitions-app.js';

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
