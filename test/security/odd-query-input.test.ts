// Odd values inside query parameters (NUL in JSON, numbers and dates past what a column holds) and
// absurdly nested capture bodies are the caller's mistake: a 400 in the error shape, or a correct
// answer, never a server error.
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { capture, iso, send } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
await capture(ctx, a.project.api_token, [
  {
    event: 'seen',
    distinct_id: 'u1',
    timestamp: iso(Date.parse('2024-06-01T12:00:00Z')),
    properties: { browser: 'Chrome' },
  },
]);

const NUL = '\u0000';

/** The answer of an operation, or its status and body when the contract check refuses it (a 500). */
async function answer(...args: Parameters<typeof call>) {
  try {
    return await call(...args);
  } catch (err) {
    return { status: 0, body: undefined, raw: (err as Error).message };
  }
}
const ERROR_SHAPE = { type: 'validation_error', code: String, detail: String };

t.test('events list', async (t) => {
  const cases: [string, Record<string, string>][] = [];
  for (const operator of ['exact', 'icontains', 'regex', 'is_not', 'not_regex', 'gt']) {
    cases.push([
      `NUL in a ${operator} key`,
      { properties: JSON.stringify([{ key: `browser${NUL}`, value: 'x', operator }]) },
    ]);
    cases.push([
      `NUL in a ${operator} value`,
      { properties: JSON.stringify([{ key: 'browser', value: `Chr${NUL}ome`, operator }]) },
    ]);
  }
  cases.push(
    ['NUL in a list value', { properties: JSON.stringify([{ key: 'browser', value: ['a', NUL] }]) }],
    ['NUL in a person property key', { properties: JSON.stringify([{ key: NUL, value: 'a', type: 'person' }]) }],
    ['NUL in a HogQL where', { where: JSON.stringify([`properties.browser = 'a${NUL}'`]) }],
    ['NUL in a HogQL where property name', { where: JSON.stringify([`properties.\`a${NUL}\` = 'a'`]) }],
    ['NUL in a HogQL select', { select: JSON.stringify([`concat(event, '${NUL}')`]) }],
    ['a fraction compared to an integer', { where: JSON.stringify(['team_id = 1.5']) }],
    ['an integer past bigint', { where: JSON.stringify(['team_id = 99999999999999999999999']) }],
    ['a date past year 9999', { where: JSON.stringify(["timestamp > '99999-01-01'"]) }],
    ['a date that is no date', { where: JSON.stringify(["timestamp > 'soon'"]) }],
    ['a far relative after', { after: '-99999999999y' }],
    ['a far relative before', { before: '-99999999999999999999d' }],
    ['a date past year 9999 in before', { before: '99999-01-01' }],
    [
      'a far relative date in a filter',
      { properties: JSON.stringify([{ key: 'signup', value: '-99999999999y', operator: 'is_date_after' }]) },
    ],
    ['a huge number in a filter', { properties: JSON.stringify([{ key: 'n', value: 1e308, operator: 'gt' }]) }],
    ['a huge exact number', { properties: JSON.stringify([{ key: 'n', value: 1e308 }]) }],
  );
  for (const [label, query] of cases) {
    const res = await answer('events_list', { key: a.key, params: { project_id: a.project.id }, query });
    if (res.status === 200) t.ok(Array.isArray(res.body.results), `${label}: 200 with a page`);
    else {
      t.match(res, { status: 400, body: ERROR_SHAPE }, `${label}: ${res.status} ${res.raw.slice(0, 200)}`);
      t.notMatch(res.raw, /Failed query|select /i, `${label}: the query itself is not shown`);
    }
  }
});

t.test('event definitions', async (t) => {
  const res = await answer('event_definitions_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { excluded_properties: JSON.stringify([`seen${NUL}`]) },
  });
  t.match(res, { status: 400, body: { ...ERROR_SHAPE, attr: 'excluded_properties' } }, res.raw.slice(0, 200));
});

t.test('capture with properties nested 5,000 deep', async (t) => {
  // Written out as text: JSON.stringify itself cannot go this deep.
  const nested = `${'{"k\\u0000":'.repeat(5_000)}"bottom"${'}'.repeat(5_000)}`;
  const body =
    `{"api_key": ${JSON.stringify(a.project.api_token)}, ` +
    `"batch": [{"event": "deep", "distinct_id": "u1", "properties": {"nested": ${nested}}}]}`;
  for (const [label, payload, headers] of [
    ['plain', body, { 'content-type': 'application/json' }],
    ['gzip', gzipSync(body), { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
  ] as const) {
    const res = await send(ctx, 'capture_batch_create', { body: payload, headers });
    t.match(
      res,
      { status: 400, body: { type: 'validation_error', code: 'invalid_payload' } },
      `${label}: ${res.status} ${res.raw.slice(0, 200)}`,
    );
  }
  // As deep as PostHog's capture takes is stored.
  const deepest = `${'{"k":'.repeat(120)}"bottom"${'}'.repeat(120)}`;
  const ok = await send(ctx, 'capture_batch_create', {
    body:
      `{"api_key": ${JSON.stringify(a.project.api_token)}, ` +
      `"batch": [{"event": "deep enough", "distinct_id": "u1", "properties": {"nested": ${deepest}}}]}`,
    headers: { 'content-type': 'application/json' },
  });
  t.equal(ok.status, 200, ok.raw);
  const alive = await call('events_list', { key: a.key, params: { project_id: a.project.id } });
  t.equal(alive.status, 200, 'the server still answers');
});
