import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const P = { project_id: a.project.id };

const webhookBody = {
  type: 'destination' as const,
  name: 'Hook',
  template_id: 'template-webhook',
  inputs: { url: { value: 'https://example.com/hook' }, body: { value: { name: '{event.event}' } } },
};

t.test('create from a template: compiled, disabled by default, slim in lists', async (t) => {
  const res = await call('hog_functions_create', { key: a.key, params: P, body: webhookBody });
  t.equal(res.status, 201);
  t.equal(res.body.enabled, false);
  t.equal(res.body.type, 'destination');
  t.match(res.body.hog, /fetch\(inputs.url, payload\)/);
  t.equal(res.body.bytecode[0], '_H');
  t.equal(res.body.inputs.url?.value, 'https://example.com/hook');
  t.equal((res.body.inputs.url?.bytecode as unknown[] | undefined)?.[0], '_H');
  t.equal(res.body.template.id, 'template-webhook');
  t.equal(res.body.execution_order, null);
  const list = await call('hog_functions_list', { key: a.key, params: P });
  t.equal(list.body.count, 1);
  t.notOk('bytecode' in list.body.results[0], 'list items are slim');
  t.notOk('inputs' in list.body.results[0]);
  const other = await call('hog_functions_list', { key: b.key, params: { project_id: b.project.id } });
  t.equal(other.body.count, 0, 'another project sees nothing');
});

t.test('list filters: type as a comma list, enabled, search', async (t) => {
  const mk = (type: 'destination' | 'transformation', name: string, enabled: boolean) =>
    call('hog_functions_create', {
      key: a.key,
      params: P,
      body: { type, name, enabled, hog: type === 'transformation' ? 'return event' : "print('hi')" },
    });
  const t1 = await mk('transformation', 'Alpha transform', true);
  const t2 = await mk('transformation', 'Beta transform', false);
  t.equal(t1.body.execution_order, 1, 'a new transformation goes last');
  t.equal(t2.body.execution_order, 2);
  const q = async (query: Record<string, string | boolean>) =>
    (await call('hog_functions_list', { key: a.key, params: P, query })).body.results.map((r) => r.name);
  t.same(await q({ type: 'transformation' }), ['Alpha transform', 'Beta transform']);
  t.same((await q({ type: 'transformation,destination' })).length, 3);
  t.same(await q({ type: 'transformation', enabled: false }), ['Beta transform']);
  t.same(await q({ search: 'BETA' }), ['Beta transform']);
});

t.test('list filters PostHog’s filterset adds: id, created_by, created_at, updated_at; search terms', async (t) => {
  const list = async (query: Record<string, string | number | boolean>, key = a.key) => {
    const res = await call('hog_functions_list', { key, params: P, query });
    t.equal(res.status, 200, JSON.stringify(query));
    return res.body.results.map((r) => r.name).sort();
  };
  const mine = (await call('hog_functions_list', { key: a.key, params: P })).body.results;
  const alpha = mine.find((f) => f.name === 'Alpha transform')!;
  const beta = mine.find((f) => f.name === 'Beta transform')!;
  const member = await makeMember(db, a);
  const made = await call('hog_functions_create', {
    key: member.key,
    params: P,
    body: { type: 'destination', name: 'Member hook', description: 'Sends a daily digest', hog: "print('x')" },
  });
  t.equal(made.status, 201);
  const foreign = await call('hog_functions_create', {
    key: b.key,
    params: { project_id: b.project.id },
    body: { type: 'destination', name: 'Foreign', hog: "print('x')" },
  });

  t.same(await list({ id: alpha.id }), ['Alpha transform']);
  t.same(await list({ id: alpha.id.toUpperCase() }), ['Alpha transform'], 'a uuid in capitals');
  t.same(await list({ id: foreign.body.id }), [], "another project's function is not found by its id");
  t.same(await list({ created_by: member.user.id }), ['Member hook']);
  t.same(await list({ created_by: a.user.id }), ['Alpha transform', 'Beta transform', 'Hook']);
  t.same(await list({ created_by: b.user.id }), [], "another organization's user made nothing here");
  t.same(await list({ created_by: 2_000_000_000 }), [], 'an id no user has');
  t.same(await list({ created_by: a.user.id, type: 'transformation', enabled: true }), ['Alpha transform']);

  // Exact times, to the millisecond answers show; any offset or none (UTC), `T` or a space, as Django reads them.
  t.same(await list({ created_at: beta.created_at }), ['Beta transform']);
  const utc = new Date(beta.created_at);
  const berlin = new Date(utc.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
  t.same(await list({ created_at: berlin }), ['Beta transform'], 'the same instant at +02:00');
  t.same(await list({ created_at: beta.created_at.replace('T', ' ').replace('Z', '') }), ['Beta transform']);
  t.same(await list({ created_at: `${beta.created_at.slice(0, -1)}999Z` }), ['Beta transform'], 'µs in that ms');
  t.same(await list({ created_at: new Date(utc.getTime() + 1).toISOString() }), [], 'a millisecond later');
  await db.execute(sql`update hog_functions set created_at = '2024-03-05T00:00:00Z' where id = ${alpha.id}`);
  t.same(await list({ created_at: '2024-03-05' }), ['Alpha transform'], "a date is its midnight's instant");
  const patched = await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id: beta.id },
    body: { description: 'changed' },
  });
  t.not(patched.body.updated_at, beta.updated_at, 'an update moves updated_at');
  t.same(await list({ updated_at: patched.body.updated_at }), ['Beta transform']);
  t.same(await list({ updated_at: beta.updated_at }), []);

  // DRF's search: every term in the name or the description; a quoted phrase is one term.
  t.same(await list({ search: 'transform beta' }), ['Beta transform']);
  t.same(await list({ search: 'transform,ALPHA' }), ['Alpha transform']);
  t.same(await list({ search: '"transform beta"' }), [], 'a phrase must appear as written');
  t.same(await list({ search: '"beta transform"' }), ['Beta transform']);
  t.same(await list({ search: 'daily hook' }), ['Member hook'], 'a term may match the description');
  t.same(await list({ search: 'foreign' }), [], "another project's functions are never searched");

  const bad = async (query: Record<string, string>, attr: string, code: string, detail: string) => {
    const res = await call('hog_functions_list', { key: a.key, params: P, query });
    t.match(res, { status: 400, body: { type: 'validation_error', attr, code, detail } }, JSON.stringify(query));
  };
  await bad({ id: 'nope' }, 'id', 'invalid', 'Enter a valid UUID.');
  await bad(
    { created_by: 'me' },
    'created_by',
    'invalid_choice',
    'Select a valid choice. That choice is not one of the available choices.',
  );
  await bad({ created_at: 'yesterday' }, 'created_at', 'invalid', 'Enter a valid date/time.');
  await bad({ updated_at: '2024-02-30T10:00:00Z' }, 'updated_at', 'invalid', 'Enter a valid date/time.');
  await bad({ created_at: '2024-01-01T25:00:00' }, 'created_at', 'invalid', 'Enter a valid date/time.');
  t.equal((await call('hog_functions_list', { params: P, query: { id: alpha.id } })).status, 401);
  const readOnly = await makeKey(db, a.user, ['hog_function:read']);
  t.same(await list({ id: alpha.id }, readOnly), ['Alpha transform'], 'hog_function:read is enough');
  const foreignKey = await call('hog_functions_list', { key: b.key, params: P, query: { id: alpha.id } });
  t.equal(foreignKey.status, 403, "another organization's key does not reach the project");
});

t.test('secrets: sealed at rest, answered as a marker, kept when omitted or sent back', async (t) => {
  const res = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      template_id: 'template-slack-webhook',
      inputs: {
        webhook_url: { value: 'https://hooks.example.com/T0/SECRET-123' },
        text: { value: 'hi {event.event}' },
      },
    },
  });
  t.equal(res.status, 201);
  t.same(res.body.inputs.webhook_url, { secret: true });
  t.notOk(res.raw.includes('SECRET-123'), 'the create answer never holds it');
  const id = res.body.id;
  const [row] = (await db.execute(
    sql`select inputs::text i, encrypted_inputs::text e from hog_functions where id = ${id}`,
  )) as unknown as { i: string; e: string }[];
  t.notOk(row?.i.includes('SECRET-123'));
  t.notOk(row?.e.includes('SECRET-123'), 'sealed at rest');
  t.match(row?.e, /enc:v1:/);
  const got = await call('hog_functions_retrieve', { key: a.key, params: { ...P, id } });
  t.notOk(got.raw.includes('SECRET-123'));
  // Sent back as read (the marker), and omitted: the value stays.
  const back = await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { inputs: got.body.inputs as never },
  });
  t.same(back.body.inputs.webhook_url, { secret: true });
  await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { inputs: { text: { value: 'changed' } } },
  });
  const run = await call('hog_functions_invocations_create', {
    key: a.key,
    params: { ...P, id },
    body: { globals: { event: { event: 'x', properties: {} } } },
  });
  t.equal(run.body.status, 'success');
  const mocked = run.body.logs.find((l) => l.message.includes('mocked'));
  t.ok(mocked, 'the fetch was mocked');
  t.notOk(run.raw.includes('SECRET-123'), 'secrets never reach logs');
  t.match(mocked?.message, /REDACTED/);
});

t.test('type cannot change; soft delete; DELETE is 405 with no body; restore', async (t) => {
  const res = await call('hog_functions_create', { key: a.key, params: P, body: webhookBody });
  const id = res.body.id;
  const bad = await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { type: 'transformation' },
  });
  t.equal(bad.status, 400);
  t.match(bad.body, {
    type: 'validation_error',
    attr: 'type',
    detail: 'Cannot modify the type of an existing function',
  });
  const del = await ctx.inject({
    method: 'DELETE',
    url: `/api/projects/${a.project.id}/hog_functions/${id}/`,
    headers: { authorization: `Bearer ${a.key}` },
  });
  t.equal(del.statusCode, 405);
  t.equal(del.body, '');
  const gone = await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { deleted: true },
  });
  t.equal(gone.status, 200);
  t.equal((await call('hog_functions_retrieve', { key: a.key, params: { ...P, id } })).status, 404);
  const back = await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { deleted: false },
  });
  t.equal(back.status, 200);
  t.equal((await call('hog_functions_retrieve', { key: a.key, params: { ...P, id } })).status, 200);
});

t.test('compile errors are 400s on hog and filters', async (t) => {
  const bad = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: { type: 'destination', hog: 'let x := ', name: 'broken' },
  });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', attr: 'hog', detail: 'Hog code has errors.' });
  const badFilter = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      hog: "print('x')",
      filters: { properties: [{ key: 'x', operator: 'nope', value: 1 }] },
    },
  });
  t.equal(badFilter.status, 400);
  t.equal(badFilter.body.attr, 'filters');
  const noType = await call('hog_functions_create', { key: a.key, params: P, body: { hog: "print('x')" } });
  t.equal(noType.status, 400);
  t.equal(noType.body.attr, 'type');
  const badType = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: { type: 'site_app', hog: "print('x')" },
  });
  t.equal(badType.status, 400);
  t.match(badType.body, { attr: 'type', detail: /site_app.*do not run here/ }, 'a PostHog type we do not run');
  const required = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: { type: 'destination', template_id: 'template-webhook', inputs: {} },
  });
  t.equal(required.status, 400);
  t.match(required.body, { attr: 'inputs__url', detail: 'This field is required.' });
});

t.test('rearrange sets the order and answers every transformation', async (t) => {
  const list = await call('hog_functions_list', { key: a.key, params: P, query: { type: 'transformation' } });
  const [first, second] = list.body.results;
  const res = await call('hog_functions_rearrange_partial_update', {
    key: a.key,
    params: P,
    body: { orders: { [first.id]: 2, [second.id]: 1 } },
  });
  t.equal(res.status, 200);
  t.same(
    res.body.map((f) => [f.id, f.execution_order]),
    [
      [second.id, 1],
      [first.id, 2],
    ],
  );
  const empty = await call('hog_functions_rearrange_partial_update', { key: a.key, params: P, body: { orders: {} } });
  t.match(empty.body, { detail: 'No orders provided' });
  const foreign = await call('hog_functions_rearrange_partial_update', {
    key: b.key,
    params: { project_id: b.project.id },
    body: { orders: { [first.id]: 5 } },
  });
  t.equal(foreign.status, 400, "another project's function cannot be reordered");
});

t.test('tenant walls and scopes', async (t) => {
  const mine = await call('hog_functions_create', { key: a.key, params: P, body: webhookBody });
  const id = mine.body.id;
  const theirs = { project_id: b.project.id, id };
  t.equal((await call('hog_functions_retrieve', { key: b.key, params: theirs })).status, 404);
  t.equal(
    (await call('hog_functions_partial_update', { key: b.key, params: theirs, body: { enabled: true } })).status,
    404,
  );
  t.equal((await call('hog_functions_logs_retrieve', { key: b.key, params: theirs })).status, 404);
  t.equal((await call('hog_functions_retrieve', { key: b.key, params: { ...P, id } })).status, 403);
  const reader = await makeKey(db, a.user, ['hog_function:read']);
  t.equal((await call('hog_functions_retrieve', { key: reader, params: { ...P, id } })).status, 200);
  t.equal((await call('hog_functions_metrics_totals_retrieve', { key: reader, params: { ...P, id } })).status, 200);
  t.equal((await call('hog_functions_create', { key: reader, params: P, body: webhookBody })).status, 403);
  const inv = await call('hog_functions_invocations_create', {
    key: reader,
    params: { ...P, id },
    body: { globals: {} },
  });
  t.equal(inv.status, 403);
  const none = await makeKey(db, a.user, ['dashboard:read']);
  t.equal((await call('hog_functions_list', { key: none, params: P })).status, 403);
  t.equal((await call('hog_functions_list', { params: P })).status, 401);
  const env = await call('environments_hog_functions_retrieve', { key: a.key, params: { ...P, id } });
  t.equal(env.body.id, id, 'the environments twin');
});
