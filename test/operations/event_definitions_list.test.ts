import t from 'tap';
import { eq, sql } from 'drizzle-orm';
import { event_definitions } from '../../src/db/schema/index.js';
import { spec } from '../../src/http/spec.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { capture } from '../helpers/events.js';
import { ctx, call, db, seeded } from '../helpers/event-definitions-app.js';

t.test('list items: PostgreSQL writes them, field for field what a retrieve answers', async (t) => {
  const { tenant: a, id } = await seeded();
  const member = await makeMember(db, a, 1);
  const params = { project_id: a.project.id };
  const patch = (name: string, body: Record<string, unknown>) =>
    call('event_definitions_partial_update', { key: a.key, params: { ...params, id: id(name) }, body });
  t.equal((await patch('signed up', { owner: member.user.id, tags: ['a"b', 'ü'], verified: true })).status, 200);
  t.equal((await patch('$pageview', { description: 'line\nbreak "quoted"', hidden: true })).status, 200);
  // Seen after the last edit, and never seen: last_updated_at is the later of the two, or the edit.
  await db.execute(
    sql`update event_definitions set last_seen_at = now() + interval '1 hour' where id = ${id('$pageview')}`,
  );
  await db.execute(sql`update event_definitions set last_seen_at = null where id = ${id('$autocapture')}`);
  const fields = Object.keys((spec.components!.schemas!.EventDefinition as { properties: object }).properties).sort();
  const res = await call('event_definitions_list', { key: a.key, params });
  t.equal(res.body.count, 4);
  t.match(res.headers['content-type'], /^application\/json; charset=utf-8/);
  for (const item of res.body.results) {
    t.same(Object.keys(item).sort(), fields, `${item.name}: exactly the contract's fields`);
    const one = await call('event_definitions_retrieve', { key: a.key, params: { ...params, id: item.id } });
    // A retrieve adds the 30-day volume, which the list leaves out as PostHog's does.
    t.same(item, { ...one.body, volume_30_day: null }, `${item.name} as a retrieve shows it`);
  }
  const byName = (name: string) => res.body.results.find((d) => d.name === name)!;
  t.match(byName('signed up'), {
    owner: { id: member.user.id, email: member.user.email },
    verified_by: { id: a.user.id },
    updated_by: { id: a.user.id },
    tags: ['a"b', 'ü'],
  });
  t.equal(byName('$pageview').last_updated_at, byName('$pageview').last_seen_at);
  t.equal(byName('$autocapture').last_updated_at, byName('$autocapture').updated_at);
});

t.test('event_definitions_list', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  await capture(ctx, b.project.api_token, [{ event: 'secret', distinct_id: 'x' }]);
  const params = { project_id: a.project.id };
  // Two days apart, so the default order (day of last_seen_at, then name) shows.
  await db
    .update(event_definitions)
    .set({ last_seen_at: new Date('2024-01-01T10:00:00Z') })
    .where(eq(event_definitions.id, id('signed up')));
  await db
    .update(event_definitions)
    .set({ last_seen_at: null })
    .where(eq(event_definitions.id, id('$autocapture')));

  const res = await call('event_definitions_list', { key: a.key, params });
  t.equal(res.status, 200);
  t.equal(res.body.count, 4);
  t.same(
    res.body.results.map((d: any) => d.name),
    ['$pageview', 'Purchase Completed', 'signed up', '$autocapture'],
  );
  t.match(res.body.results[0], {
    id: id('$pageview'),
    name: '$pageview',
    owner: null,
    description: null,
    tags: [],
    verified: false,
    hidden: false,
    is_action: false,
    created_by: null,
    default_columns: [],
    volume_30_day: null,
  });
  t.match(res.body.results[0].last_seen_at, /^\d{4}-\d\d-\d\dT/);
  t.equal(res.body.results[3].last_seen_at, null);

  const names = async (query: Record<string, string | number | boolean | string[]>) => {
    const r = await call('event_definitions_list', { key: a.key, params, query });
    t.equal(r.status, 200, JSON.stringify(query));
    return r.body.results.map((d: any) => d.name);
  };
  t.same(await names({ search: 'PURCH' }), ['Purchase Completed']);
  t.same(await names({ search: 'up sign' }), ['signed up'], 'every word must match');
  t.same(await names({ search: '%' }), [], 'wildcards are literal');
  t.same(await names({ event_type: 'event_posthog', ordering: 'name' }), ['$autocapture', '$pageview']);
  t.same(await names({ event_type: 'event_custom', ordering: 'name' }), ['Purchase Completed', 'signed up']);
  t.same(await names({ event_type: 'action_event' }), []);
  t.equal((await names({ event_type: 'all' })).length, 4);
  t.same(await names({ ordering: '-name' }), ['signed up', 'Purchase Completed', '$pageview', '$autocapture']);
  t.same(
    await names({ ordering: 'last_seen_at' }),
    ['signed up', '$pageview', 'Purchase Completed', '$autocapture'],
    'ties by name, never seen last',
  );
  t.same(
    await names({ ordering: ['-last_seen_at::date', '-name'] }),
    ['Purchase Completed', '$pageview', 'signed up', '$autocapture'],
    'repeatable',
  );
  t.same(await names({ excluded_properties: '["$pageview","signed up"]', ordering: 'name' }), [
    '$autocapture',
    'Purchase Completed',
  ]);
  const page = await call('event_definitions_list', {
    key: a.key,
    params,
    query: { limit: 1, offset: 1, ordering: 'name' },
  });
  t.same(
    page.body.results.map((d: any) => d.name),
    ['$pageview'],
  );
  t.match(page.body, { count: 4, next: /limit=1&offset=2/, previous: /limit=1/ });
  for (const query of [{ offset: 10 }, { offset: 10, ordering: 'name' }] as Record<string, string | number>[]) {
    const past = await call('event_definitions_list', { key: a.key, params, query });
    t.same([past.body.count, past.body.results], [4, []], 'a page past the end still counts them all');
  }

  await call('event_definitions_partial_update', {
    key: a.key,
    params: { ...params, id: id('$pageview') },
    body: { hidden: true },
  });
  t.notOk((await names({ exclude_hidden: true })).includes('$pageview'));
  t.ok((await names({})).includes('$pageview'));

  const badOrdering = await call('event_definitions_list', { key: a.key, params, query: { ordering: 'volume' } });
  t.match(badOrdering, { status: 400, body: { code: 'invalid_choice', attr: 'ordering' } });
  const badType = await call('event_definitions_list', { key: a.key, params, query: { event_type: 'cohort' } });
  t.same(badType.body, {
    type: 'validation_error',
    code: 'invalid_choice',
    detail: '"cohort" is not a valid choice.',
    attr: 'event_type',
  });
  const badExcluded = await call('event_definitions_list', { key: a.key, params, query: { excluded_properties: '{' } });
  t.match(badExcluded, { status: 400, body: { attr: 'excluded_properties' } });

  t.equal((await call('event_definitions_list', { params })).status, 401);
  const noScope = await makeKey(db, a.user, ['query:read']);
  t.same(
    (await call('event_definitions_list', { key: noScope, params })).body.detail,
    "API key missing required scope 'event_definition:read'",
  );
  const writer = await makeKey(db, a.user, ['event_definition:write']);
  t.equal((await call('event_definitions_list', { key: writer, params })).status, 200, 'write implies read');
  t.equal((await call('event_definitions_list', { key: b.key, params })).status, 403, "another organization's project");
  const own = await call('event_definitions_list', { key: b.key, params: { project_id: b.project.id } });
  t.same(
    own.body.results.map((d: any) => d.name),
    ['secret'],
    'each project sees only its own',
  );
});

t.test('event_definitions_list: each definition as its retrieve shows it, timestamps written alike', async (t) => {
  const { tenant: a, id } = await seeded();
  const member = await makeMember(db, a, 1, ['event_definition:write']);
  const params = { project_id: a.project.id };
  // Microseconds, which both paths cut to milliseconds; one last seen after its update, one before.
  await db.execute(
    sql`update event_definitions set last_seen_at = '2031-02-03 04:05:06.789987+00',
      verified_at = '2024-05-06 07:08:09.000001+02' where id = ${id('signed up')}`,
  );
  await db.execute(
    sql`update event_definitions set last_seen_at = '2001-01-01 00:00:00.5+00' where id = ${id('$pageview')}`,
  );
  const patched = await call('event_definitions_partial_update', {
    key: a.key,
    params: { ...params, id: id('Purchase Completed') },
    body: { owner: member.user.id, verified: true },
  });
  t.equal(patched.status, 200);

  const list = await call('event_definitions_list', { key: a.key, params });
  t.equal(list.status, 200);
  t.equal(list.body.results.length, 4);
  for (const listed of list.body.results) {
    const one = await call('event_definitions_retrieve', { key: a.key, params: { ...params, id: listed.id } });
    t.same(listed, one.body, listed.name);
  }
  const signedUp = list.body.results.find((d: any) => d.name === 'signed up');
  t.match(signedUp, {
    last_seen_at: '2031-02-03T04:05:06.789Z',
    last_updated_at: '2031-02-03T04:05:06.789Z',
    verified_at: '2024-05-06T05:08:09.000Z',
  });
});
