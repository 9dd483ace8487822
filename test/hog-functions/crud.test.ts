import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeTenant } from '../helpers/factories.js';

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
