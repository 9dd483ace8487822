import t from 'tap';
import { randomUUID } from 'node:crypto';
import { spec } from '../../src/http/spec.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant } from '../helpers/factories.js';
import { capture, iso, personOf } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const T0 = Date.parse('2024-06-01T12:00:00Z');

t.test('events_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const uuid = randomUUID();
  await capture(ctx, a.project.api_token, [
    {
      event: 'first',
      distinct_id: 'u1',
      timestamp: iso(T0),
      uuid,
      properties: { $browser: 'Chrome', $set: { email: 'u1@x' } },
    },
    {
      event: 'second',
      distinct_id: 'u2',
      timestamp: iso(T0 + 1000),
      elements_chain: 'a.nav:href="/x"nth-child="1"nth-of-type="2"text="Go"',
    },
  ]);
  await capture(ctx, b.project.api_token, [{ event: 'secret', distinct_id: 'b1', timestamp: iso(T0 + 5000) }]);
  const params = { project_id: a.project.id };

  const res = await call('events_list', { key: a.key, params });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), ['next', 'results'], 'no count');
  t.equal(res.body.next, null);
  t.same(
    res.body.results.map((e: any) => e.event),
    ['second', 'first'],
    'newest first, only this project',
  );
  t.match(res.body.results[1], {
    id: uuid,
    distinct_id: 'u1',
    event: 'first',
    timestamp: '2024-06-01T12:00:00.000Z',
    person: null,
    elements: [],
    elements_chain: '',
    properties: { $browser: 'Chrome' },
  });
  t.same(res.body.results[0].elements, [
    {
      text: 'Go',
      tag_name: 'a',
      attr_class: ['nav'],
      href: '/x',
      attr_id: null,
      nth_child: 1,
      nth_of_type: 2,
      attributes: {},
      order: 0,
    },
  ]);
  const current = await call('events_list', { key: a.key, params: { project_id: '@current' } });
  t.equal(current.body.results.length, 2, '@current works');
  const withPerson = await call('events_list', { key: a.key, params, query: { include_person: true, event: 'first' } });
  const person = (await personOf(db, a.project.id, 'u1'))!;
  t.same(withPerson.body.results[0].person, {
    id: person.id,
    uuid: person.uuid,
    is_identified: false,
    distinct_ids: ['u1'],
    properties: { email: 'u1@x' },
  });

  t.test('auth and tenancy', async (t) => {
    t.equal((await call('events_list', { params })).status, 401);
    const noScope = await makeKey(db, a.user, ['event_definition:read']);
    t.same(
      (await call('events_list', { key: noScope, params })).body.detail,
      "API key missing required scope 'query:read'",
    );
    const reader = await makeKey(db, a.user, ['query:read']);
    t.equal((await call('events_list', { key: reader, params })).status, 200);
    const other = await call('events_list', { key: b.key, params });
    t.same([other.status, other.body.detail], [403, "You don't have access to the project."]);
    const member = await makeMember(db, a, 1, ['query:read']);
    t.equal((await call('events_list', { key: member.key, params })).body.results.length, 2, 'any member may read');
    const scoped = await makeKey(db, a.user, ['query:read'], { scoped_teams: [b.project.id] });
    t.equal((await call('events_list', { key: scoped, params })).status, 403);
    t.equal((await call('events_list', { key: a.key, params: { project_id: 999999 } })).status, 404);
  });
});

t.test('filters: event, distinct_id, person_id, after, before', async (t) => {
  const a = await makeTenant(db);
  await capture(ctx, a.project.api_token, [
    { event: 'view', distinct_id: 'anon', timestamp: iso(T0) },
    { event: 'click', distinct_id: 'anon', timestamp: iso(T0 + 1000) },
    { event: 'view', distinct_id: 'bob', timestamp: iso(T0 + 2000) },
    { event: '$identify', distinct_id: 'carol', timestamp: iso(T0 + 3000), properties: { $anon_distinct_id: 'anon' } },
  ]);
  const params = { project_id: a.project.id };
  const names = async (query: Record<string, string | number>) => {
    const r = await call('events_list', { key: a.key, params, query });
    t.equal(r.status, 200, JSON.stringify(query));
    return r.body.results.map((e: any) => `${e.event}:${e.distinct_id}`);
  };
  t.same(await names({ event: 'view' }), ['view:bob', 'view:anon']);
  t.same(await names({ distinct_id: 'anon' }), ['click:anon', 'view:anon']);
  const carol = (await personOf(db, a.project.id, 'carol'))!;
  t.same(await names({ person_id: carol.id }), ['$identify:carol', 'click:anon', 'view:anon'], 'merged ids count');
  t.same(await names({ person_id: carol.uuid }), ['$identify:carol', 'click:anon', 'view:anon'], 'by uuid too');
  t.same(await names({ person_id: randomUUID() }), []);
  t.same(await names({ person_id: 99999999999 }), []);
  t.same(await names({ after: iso(T0 + 1000) }), ['$identify:carol', 'view:bob'], 'after is exclusive');
  t.same(await names({ before: iso(T0 + 1000) }), ['view:anon']);
  t.same(await names({ after: '2024-06-01T12:00:00.500', before: '2024-06-01T14:00:01.500+02:00' }), ['click:anon']);
  t.same(await names({ before: '2024-06-01' }), []);
  t.same(await names({ after: '-7d' }), [], 'relative dates');
  const bad = await call('events_list', { key: a.key, params, query: { after: 'last tuesday' } });
  t.match(bad, { status: 400, body: { attr: 'after', type: 'validation_error' } });
  const badPerson = await call('events_list', { key: a.key, params, query: { person_id: 'bob' } });
  t.match(badPerson, { status: 400, body: { attr: 'person_id' } });
  const badOrder = await call('events_list', { key: a.key, params, query: { orderBy: '["event"]' } });
  t.match(badOrder, { status: 400, body: { attr: 'orderBy' } });
  t.same(await names({ orderBy: '["timestamp"]', limit: 2 }), ['view:anon', 'click:anon'], 'oldest first');
  const badLimit = await call('events_list', { key: a.key, params, query: { limit: 'many' } });
  t.match(badLimit, { status: 400, body: { attr: 'limit' } });
});

/** A next-page link: the edge timestamp of the page and a cursor, among any other parameters. */
const NEXT_PAGE =
  /^http:\/\/localhost\/api\/projects\/\d+\/events\/\?.*(before|after)=2024-06-01T12%3A00%3A\d\d\.000000Z.*cursor=/;

t.test('pagination returns every event once, even with equal timestamps', async (t) => {
  const a = await makeTenant(db);
  const batch = [];
  for (let i = 0; i < 23; i++)
    batch.push({ event: `e${i}`, distinct_id: 'd', timestamp: iso(T0 + (i < 15 ? 0 : i) * 1000) });
  await capture(ctx, a.project.api_token, batch);
  for (const order of ['["-timestamp"]', '["timestamp"]']) {
    const seen: string[] = [];
    let url: string | null = `/api/projects/${a.project.id}/events/?limit=4&orderBy=${encodeURIComponent(order)}`;
    let pages = 0;
    while (url) {
      const res = await ctx.inject({ method: 'GET', url, headers: { authorization: `Bearer ${a.key}` } });
      t.equal(res.statusCode, 200);
      const body = res.json();
      seen.push(...body.results.map((e: any) => e.event));
      url = body.next ? new URL(body.next).pathname + new URL(body.next).search : null;
      if (body.next) t.match(body.next, NEXT_PAGE);
      pages++;
    }
    t.equal(pages, 6);
    t.equal(seen.length, 23, `${order}: every event`);
    t.equal(new Set(seen).size, 23, `${order}: each once`);
  }
  const r = await call('events_list', { key: a.key, params: { project_id: a.project.id }, query: { cursor: '!!' } });
  t.match(r, { status: 400, body: { attr: 'cursor' } });
  const offset = await call('events_list', {
    key: a.key,
    params: { project_id: a.project.id },
    query: { limit: 5, offset: 20 },
  });
  t.equal(offset.body.results.length, 3, 'offset still works');
});

t.test('default limit 100, clamped at 1000', async (t) => {
  const a = await makeTenant(db);
  const batch = Array.from({ length: 1005 }, (_, i) => ({
    event: 'bulk',
    distinct_id: `d${i % 7}`,
    timestamp: iso(T0 + i),
  }));
  await capture(ctx, a.project.api_token, batch);
  const params = { project_id: a.project.id };
  const first = await call('events_list', { key: a.key, params });
  t.equal(first.body.results.length, 100);
  t.ok(first.body.next);
  const clamped = await call('events_list', { key: a.key, params, query: { limit: 5000 } });
  t.equal(clamped.body.results.length, 1000);
  t.match(clamped.body.next, /limit=5000/);
});

t.test('CSV', async (t) => {
  const a = await makeTenant(db);
  await capture(ctx, a.project.api_token, [
    {
      event: 'quote "me"',
      distinct_id: 'a,b',
      timestamp: iso(T0),
      properties: { note: 'line1\nline2', n: 3, nested: { deep: true }, flag: false, tags: ['x', 'y'], none: [] },
    },
    { event: 'plain', distinct_id: 'c', timestamp: iso(T0 + 1000), properties: { other: 'x' } },
  ]);
  const params = { project_id: a.project.id };
  const res = await call('events_list', { key: a.key, params, query: { format: 'csv' } });
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^text\/csv/);
  const lines = res.raw.split('\r\n');
  t.equal(
    lines[0],
    'id,event,distinct_id,timestamp,elements_chain,person,properties.$ip,properties.flag,properties.n,' +
      'properties.nested.deep,properties.note,properties.other,properties.tags.0,properties.tags.1',
    "PostHog's renderer: lists open into numbered columns, an empty one into none",
  );
  t.match(lines[1], /^[0-9a-f-]{36},plain,c,2024-06-01T12:00:01\.000Z,,,127\.0\.0\.1,,,,,x,,$/);
  t.match(
    res.raw,
    /,"quote ""me""","a,b",2024-06-01T12:00:00\.000Z,,,127\.0\.0\.1,False,3,True,"line1\nline2",,x,y\r\n$/,
    'booleans as Python writes them',
  );
  const byAccept = await call('events_list', { key: a.key, params, headers: { accept: 'text/csv' } });
  t.equal(byAccept.raw, res.raw, 'Accept: text/csv selects CSV');
  const json = await call('events_list', {
    key: a.key,
    params,
    query: { format: 'json' },
    headers: { accept: 'text/csv' },
  });
  t.equal(json.body.results.length, 2, 'format=json wins over Accept');
  const empty = await call('events_list', { key: a.key, params, query: { format: 'csv', event: 'none' } });
  t.equal(empty.raw, 'id,event,distinct_id,timestamp,elements_chain\r\n');
  const badFormat = await call('events_list', { key: a.key, params, query: { format: 'xml' } });
  t.match(badFormat, { status: 400, body: { code: 'invalid_choice', attr: 'format' } });
});

t.test('list: PostgreSQL writes each event, field for field what a retrieve answers', async (t) => {
  const a = await makeTenant(db);
  const params = { project_id: a.project.id };
  await capture(ctx, a.project.api_token, [
    {
      event: 'nested "quoted" ü',
      distinct_id: 'p1',
      timestamp: '2024-06-01T12:00:00.123456Z',
      properties: {
        n: 1.5,
        big: 12345678901234,
        deep: { list: [1, 'two', null, true] },
        s: 'line\nbreak',
        $set: { a: 1 },
      },
    },
    {
      event: 'clicked',
      distinct_id: 'p2',
      timestamp: iso(T0 + 1000),
      elements_chain: 'button.primary:attr__id="go"nth-child="2"text="Go \\"now\\""',
    },
    { event: 'plain', distinct_id: 'p1', timestamp: iso(T0 + 2000) },
  ]);
  const fields = Object.keys((spec.components!.schemas!.Event as { properties: object }).properties).sort();
  for (const include_person of [false, true]) {
    const res = await call('events_list', { key: a.key, params, query: { include_person } });
    t.equal(res.status, 200);
    t.match(res.headers['content-type'], /^application\/json; charset=utf-8/);
    t.equal(res.body.results.length, 3);
    for (const item of res.body.results as Record<string, unknown>[]) {
      t.same(Object.keys(item).sort(), fields, `${item.event}: exactly the contract's fields`);
      const one = await call('events_retrieve', {
        key: a.key,
        params: { ...params, id: item.id as string },
        query: { include_person },
      });
      t.same(item, one.body, `${item.event} as a retrieve shows it (include_person=${include_person})`);
    }
    const clicked = (res.body.results as Record<string, any>[]).find((e) => e.event === 'clicked')!;
    t.match(clicked.elements, [
      { tag_name: 'button', text: 'Go "now"', attr_class: ['primary'], nth_child: 2, attributes: { attr__id: 'go' } },
    ]);
    const nested = (res.body.results as Record<string, any>[]).find(
      (e) => e.distinct_id === 'p1' && e.properties.deep,
    )!;
    t.equal(nested.timestamp, '2024-06-01T12:00:00.123Z');
    t.same(nested.properties.deep, { list: [1, 'two', null, true] });
    if (include_person) t.match(nested.person, { distinct_ids: ['p1'] });
    else t.equal(nested.person, null);
  }
});

t.test('events_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const uuid = randomUUID();
  await capture(ctx, a.project.api_token, [
    { event: 'one', distinct_id: 'd', uuid, timestamp: iso(T0), properties: { k: 'v' } },
  ]);
  const params = { project_id: a.project.id, id: uuid };
  const res = await call('events_retrieve', { key: a.key, params });
  t.match(res, { status: 200, body: { id: uuid, event: 'one', properties: { k: 'v' }, person: null } });
  const upper = await call('events_retrieve', { key: a.key, params: { ...params, id: uuid.toUpperCase() } });
  t.equal(upper.body.id, uuid);
  const withPerson = await call('events_retrieve', { key: a.key, params, query: { include_person: true } });
  t.same(withPerson.body.person.distinct_ids, ['d']);
  const csv = await call('events_retrieve', { key: a.key, params, query: { format: 'csv' } });
  t.match(
    csv.raw,
    new RegExp(
      `^id,event,distinct_id,timestamp,elements_chain,person,properties.\\$ip,properties.k\\r\\n${uuid},one,d,`,
    ),
  );
  const invalid = await call('events_retrieve', { key: a.key, params: { ...params, id: 'nope' } });
  t.same(invalid.body, { type: 'validation_error', code: 'invalid_input', detail: 'Invalid UUID', attr: 'id' });
  const missing = randomUUID();
  const notFound = await call('events_retrieve', { key: a.key, params: { ...params, id: missing } });
  t.same([notFound.status, notFound.body.detail], [404, `No events exist for event UUID ${missing}`]);
  const other = await makeProject(db, b);
  const elsewhere = await call('events_retrieve', { key: b.key, params: { project_id: other.id, id: uuid } });
  t.equal(elsewhere.status, 404, "another project's event is not found from there");
  t.equal((await call('events_retrieve', { key: b.key, params })).status, 403);
  t.equal((await call('events_retrieve', { params })).status, 401);
  const noScope = await makeKey(db, a.user, ['dashboard:read']);
  t.equal((await call('events_retrieve', { key: noScope, params })).status, 403);
});

t.test('events_values_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const now = Date.now();
  await capture(ctx, a.project.api_token, [
    {
      event: 'view',
      distinct_id: 'd1',
      timestamp: iso(now - 1000),
      properties: { browser: 'Chrome', tags: ['x', 'y'], flag: true, obj: { b: 1 } },
    },
    { event: 'view', distinct_id: 'd2', timestamp: iso(now - 2000), properties: { browser: 'Chrome' } },
    { event: 'click', distinct_id: 'd1', timestamp: iso(now - 3000), properties: { browser: 'Firefox', tags: ['x'] } },
    { event: '$pageview', distinct_id: 'd1', timestamp: iso(now - 4000), properties: { browser: 'Safari' } },
    { event: 'old', distinct_id: 'd1', timestamp: iso(now - 8 * 86_400_000), properties: { browser: 'Netscape' } },
  ]);
  await capture(ctx, b.project.api_token, [{ event: 'view', distinct_id: 'z', properties: { browser: 'Opera' } }]);
  const params = { project_id: a.project.id };
  const values = async (query: Record<string, string | boolean | string[]>) => {
    const r = await call('events_values_retrieve', { key: a.key, params, query });
    t.equal(r.status, 200);
    return r.body;
  };
  t.same(
    await values({ key: 'browser' }),
    [{ name: 'Chrome' }, { name: 'Firefox' }, { name: 'Safari' }],
    'most frequent first; last 7 days; own project',
  );
  t.same(await values({ key: 'browser', value: 'FIRE' }), [{ name: 'Firefox' }]);
  t.same(await values({ key: 'browser', event_name: ['click', '$pageview'] }), [
    { name: 'Firefox' },
    { name: 'Safari' },
  ]);
  t.same(await values({ key: 'tags' }), [{ name: 'x' }, { name: 'y' }], 'lists count element by element');
  t.same(await values({ key: 'flag' }), [{ name: 'true' }]);
  t.same(await values({ key: 'obj' }), [{ name: '{"b": 1}' }]);
  t.same(await values({ key: 'distinct_id', is_column: true }), [{ name: 'd1' }, { name: 'd2' }]);
  t.same(await values({ key: 'custom_event' }), [{ name: 'view' }, { name: 'click' }]);
  const csv = await call('events_values_retrieve', { key: a.key, params, query: { key: 'browser', format: 'csv' } });
  t.equal(csv.raw, 'name\r\nChrome\r\nFirefox\r\nSafari\r\n');
  const missing = await call('events_values_retrieve', { key: a.key, params });
  t.same(missing.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'You must provide a key',
    attr: 'key',
  });
  const badColumn = await call('events_values_retrieve', {
    key: a.key,
    params,
    query: { key: 'timestamp', is_column: true },
  });
  t.match(badColumn, { status: 400, body: { attr: 'key' } });
  t.equal((await call('events_values_retrieve', { params, query: { key: 'browser' } })).status, 401);
  const noScope = await makeKey(db, a.user, ['event_definition:read']);
  t.equal((await call('events_values_retrieve', { key: noScope, params, query: { key: 'browser' } })).status, 403);
  t.equal((await call('events_values_retrieve', { key: b.key, params, query: { key: 'browser' } })).status, 403);
});
