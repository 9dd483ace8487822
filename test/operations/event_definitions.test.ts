import t from 'tap';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { eq, sql } from 'drizzle-orm';
import { event_definitions } from '../../src/db/schema/index.js';
import { spec } from '../../src/http/spec.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant, makeUser } from '../helpers/factories.js';
import { capture, definitions } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

async function seeded() {
  const tenant = await makeTenant(db);
  await capture(ctx, tenant.project.api_token, [
    { event: '$pageview', distinct_id: 'd' },
    { event: 'signed up', distinct_id: 'd' },
    { event: 'Purchase Completed', distinct_id: 'd' },
    { event: '$autocapture', distinct_id: 'd' },
  ]);
  const defs = await definitions(db, tenant.project.id);
  const id = (name: string) => defs.find((d) => d.name === name)!.id;
  return { tenant, id };
}

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

t.test('event_definitions_retrieve', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  const params = { project_id: a.project.id, id: id('signed up') };
  const res = await call('event_definitions_retrieve', { key: a.key, params });
  t.match(res, { status: 200, body: { id: id('signed up'), name: 'signed up' } });
  t.equal((await call('event_definitions_retrieve', { key: a.key, params: { ...params, id: 'nope' } })).status, 404);
  t.equal(
    (await call('event_definitions_retrieve', { key: a.key, params: { ...params, id: randomUUID() } })).status,
    404,
  );
  t.equal(
    (
      await call('event_definitions_retrieve', {
        key: b.key,
        params: { project_id: b.project.id, id: id('signed up') },
      })
    ).status,
    404,
  );
  t.equal((await call('event_definitions_retrieve', { key: b.key, params })).status, 403);
  t.equal((await call('event_definitions_retrieve', { params })).status, 401);
  const noScope = await makeKey(db, a.user, ['query:read']);
  t.equal((await call('event_definitions_retrieve', { key: noScope, params })).status, 403);
});

t.test('event_definitions_partial_update', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  const member = await makeMember(db, a, 1, ['event_definition:write']);
  const params = { project_id: a.project.id, id: id('signed up') };
  const patch = (body: unknown, key = a.key) => call('event_definitions_partial_update', { key, params, body });

  const res = await patch({
    description: 'A user signs up',
    tags: ['KPI', ' Growth ', 'growth', ''],
    owner: member.user.id,
    name: 'renamed',
    verified: true,
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    name: 'signed up',
    description: 'A user signs up',
    tags: ['growth', 'kpi'],
    verified: true,
    hidden: false,
  });
  t.match(res.body.owner, { id: member.user.id, email: member.user.email });
  t.match(res.body.verified_by, { id: a.user.id });
  t.match(res.body.updated_by, { id: a.user.id });
  t.match(res.body.verified_at, /^\d{4}-/);

  const byMember = await patch({ hidden: true }, member.key);
  t.match(
    byMember.body,
    { hidden: true, verified: false, verified_at: null, verified_by: null },
    'hiding clears verification',
  );
  t.match(byMember.body.updated_by, { id: member.user.id }, 'any member may edit');
  const verifyAgain = await patch({ verified: true });
  t.match(verifyAgain.body, { hidden: false, verified: true }, 'verifying shows it again');
  const both = await patch({ hidden: true, verified: true });
  t.same(both.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'An event cannot be both hidden and verified',
    attr: null,
  });
  const unverify = await patch({ verified: false, owner: null, description: null, tags: [] });
  t.match(unverify.body, { verified: false, verified_by: null, owner: null, description: null, tags: [] });

  const stranger = await makeUser(db);
  const badOwner = await patch({ owner: stranger.id });
  t.same(badOwner.body, {
    type: 'validation_error',
    code: 'does_not_exist',
    detail: `Invalid pk "${stranger.id}" - object does not exist.`,
    attr: 'owner',
  });
  t.match(await patch({ owner: 'me' }), {
    status: 400,
    body: { attr: 'owner', detail: 'A valid integer is required.' },
  });
  t.match(await patch({ tags: 'growth' }), { status: 400, body: { attr: 'tags', code: 'not_a_list' } });
  t.match(await patch({ verified: 'yes' }), { status: 400, body: { attr: 'verified' } });
  t.match(await patch({ tags: ['x'.repeat(256)] }), { status: 400, body: { attr: 'tags__0' } });

  t.equal((await patch({})).status, 200);
  const readOnly = await makeKey(db, a.user, ['event_definition:read']);
  t.equal((await patch({ description: 'x' }, readOnly)).status, 403);
  t.equal((await patch({ description: 'x' }, b.key)).status, 403);
  t.equal(
    (
      await call('event_definitions_partial_update', {
        key: b.key,
        params: { project_id: b.project.id, id: id('signed up') },
        body: {},
      })
    ).status,
    404,
  );
  t.equal((await call('event_definitions_partial_update', { params, body: {} })).status, 401);
  const stored = (await definitions(db, a.project.id)).find((d) => d.name === 'signed up')!;
  t.equal(stored.description, null, 'refused updates changed nothing');
});

t.test('event_definitions_destroy', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  const params = { project_id: a.project.id, id: id('signed up') };
  const readOnly = await makeKey(db, a.user, ['event_definition:read']);
  t.equal((await call('event_definitions_destroy', { key: readOnly, params })).status, 403);
  t.equal((await call('event_definitions_destroy', { key: b.key, params })).status, 403);
  t.equal(
    (await call('event_definitions_destroy', { key: b.key, params: { project_id: b.project.id, id: id('signed up') } }))
      .status,
    404,
  );
  t.equal((await call('event_definitions_destroy', { params })).status, 401);
  const res = await call('event_definitions_destroy', { key: a.key, params });
  t.equal(res.status, 204);
  t.equal(res.raw, '');
  t.equal((await call('event_definitions_retrieve', { key: a.key, params })).status, 404);
  t.equal((await call('event_definitions_destroy', { key: a.key, params })).status, 404);
  await capture(ctx, a.project.api_token, [{ event: 'signed up', distinct_id: 'd' }]);
  const again = (await definitions(db, a.project.id)).find((d) => d.name === 'signed up');
  t.ok(again && again.id !== id('signed up'), 'the next event of that name creates a fresh definition');
});

t.test('event_definitions_update (PUT)', async (t) => {
  const { tenant, id } = await seeded();
  const other = await seeded();
  const params = { project_id: tenant.project.id, id: id('signed up') };
  const first = await call('event_definitions_update', {
    key: tenant.key,
    params,
    body: { description: 'Sign-ups', owner: tenant.user.id },
  });
  t.match(first.body, { description: 'Sign-ups', owner: { id: tenant.user.id } });
  const second = await call('event_definitions_update', { key: tenant.key, params, body: { hidden: true } });
  t.match(
    second.body,
    { description: 'Sign-ups', owner: { id: tenant.user.id }, hidden: true },
    'fields left out keep their values',
  );
  const stranger = await makeUser(db);
  const bad = await call('event_definitions_update', { key: tenant.key, params, body: { owner: stranger.id } });
  t.match(bad.body, { code: 'does_not_exist', attr: 'owner' });
  const cross = await call('event_definitions_update', {
    key: tenant.key,
    params: { project_id: tenant.project.id, id: other.id('signed up') },
    body: { description: 'x' },
  });
  t.equal(cross.status, 404);
  const [row] = await db
    .select()
    .from(event_definitions)
    .where(eq(event_definitions.id, other.id('signed up')));
  t.equal(row!.description, null, 'another project’s definition is unchanged');
  t.equal(
    (
      await call('event_definitions_update', {
        key: tenant.key,
        params: { project_id: other.tenant.project.id, id: other.id('signed up') },
        body: {},
      })
    ).status,
    403,
  );
  t.equal(
    (
      await call('event_definitions_update', {
        key: await makeKey(db, tenant.user, ['event_definition:read']),
        params,
        body: {},
      })
    ).status,
    403,
  );
  t.equal((await call('event_definitions_update', { params, body: {} })).status, 401);
});

t.test('event_definitions_metrics_retrieve', async (t) => {
  const { tenant, id } = await seeded();
  const other = await seeded();
  const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
  await capture(ctx, tenant.project.api_token, [
    { event: 'signed up', distinct_id: 'e' },
    { event: 'signed up', distinct_id: 'f', timestamp: old },
  ]);
  const params = { project_id: tenant.project.id, id: id('signed up') };
  const res = await call('event_definitions_metrics_retrieve', { key: tenant.key, params });
  t.same(
    res.body,
    { query_usage_30_day: null, volume_30_day: 2 },
    'events older than 30 days and other projects’ events do not count',
  );
  const cross = await call('event_definitions_metrics_retrieve', {
    key: tenant.key,
    params: { project_id: tenant.project.id, id: other.id('signed up') },
  });
  t.equal(cross.status, 404);
  t.equal(
    (
      await call('event_definitions_metrics_retrieve', {
        key: tenant.key,
        params: { project_id: other.tenant.project.id, id: other.id('signed up') },
      })
    ).status,
    403,
  );
  t.equal((await call('event_definitions_metrics_retrieve', { params })).status, 401);
  t.equal(
    (
      await call('event_definitions_metrics_retrieve', {
        key: await makeKey(db, tenant.user, ['dashboard:read']),
        params,
      })
    ).status,
    403,
  );
});

t.test('event_definitions_typescript_retrieve: a module that type-checks against posthog-js', async (t) => {
  const { tenant } = await seeded();
  const other = await makeTenant(db);
  await capture(ctx, other.project.api_token, [{ event: 'their event', distinct_id: 'x' }]);
  const params = { project_id: tenant.project.id };
  const res = await call('event_definitions_typescript_retrieve', { key: tenant.key, params });
  t.equal(res.status, 200);
  t.match(res.body, { event_count: 3, generator_version: '1.0.0', schema_hash: /^[0-9a-f]{32}$/ });
  const entry = (name: string) => `"${name.replace('$', '\\$')}": Record<string, any>\\n`;
  t.match(
    res.body.content,
    new RegExp([entry('$pageview'), entry('Purchase Completed'), entry('signed up')].join(' {2}')),
  );
  t.notMatch(res.body.content, /\$autocapture|their event/, 'other PostHog events and other projects stay out');
  const again = await call('event_definitions_typescript_retrieve', { key: tenant.key, params });
  t.equal(again.body.schema_hash, res.body.schema_hash, 'the hash does not move without a change');
  await capture(ctx, tenant.project.api_token, [{ event: 'logged out', distinct_id: 'd' }]);
  const more = await call('event_definitions_typescript_retrieve', { key: tenant.key, params });
  t.not(more.body.schema_hash, res.body.schema_hash);

  // The module and a use of it compile together under strict settings against the installed posthog-js.
  const dir = mkdtempSync(join(process.cwd(), '.tap', 'typescript-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'posthog-typed.ts'), more.body.content);
  writeFileSync(
    join(dir, 'use.ts'),
    [
      "import posthog from './posthog-typed'",
      "posthog.capture('signed up', { plan: 'pro' })",
      "posthog.capture('logged out')",
      "posthog.capture('not defined yet', { any: 1 })",
      "posthog.captureRaw('anything')",
      'declare const name: string',
      '// @ts-expect-error a plain string is not a known event name',
      'posthog.capture(name)',
    ].join('\n'),
  );
  const program = ts.createProgram([join(dir, 'use.ts')], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2020,
  });
  const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  t.same(errors, [], 'no type errors');

  t.equal((await call('event_definitions_typescript_retrieve', { params })).status, 401);
  t.equal(
    (await call('event_definitions_typescript_retrieve', { key: tenant.key, params: { project_id: other.project.id } }))
      .status,
    403,
  );
  t.equal(
    (
      await call('event_definitions_typescript_retrieve', {
        key: await makeKey(db, tenant.user, ['dashboard:read']),
        params,
      })
    ).status,
    403,
  );
});
