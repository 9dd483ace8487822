// A destination's mappings, as PostHog runs them: the function's filters first, then one delivery per mapping
// whose own filters match, with the mapping's inputs over the function's. Secret mapping inputs are sealed
// and answered `{"secret": true}`.
import t from 'tap';
import { captureServer, waitFor } from '../helpers/batch-exports.js';
import { deliveryApp } from './delivery-app.js';

const { ctx, a, b, P, capture } = await deliveryApp(t);
const { call } = ctx;

const bodySchema = [{ key: 'body', type: 'json', label: 'Body' }];
const mapping = (name: string, event: string, kind: string, extra: Record<string, unknown> = {}) => ({
  name,
  inputs_schema: bodySchema,
  inputs: { body: { value: { kind, name: '{event.event}' } } },
  filters: { events: [{ id: event, type: 'events' }] },
  ...extra,
});

t.test('one delivery per matching mapping, with its inputs', async (t) => {
  const sink = await captureServer(t);
  const created = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      enabled: true,
      template_id: 'template-webhook',
      inputs: { url: { value: sink.url }, body: { value: { kind: 'top' } } },
      // The function's own filters come first: `ignored` reaches no mapping.
      filters: {
        events: [
          { id: 'signed_up', type: 'events' },
          { id: 'paid', type: 'events' },
        ],
      },
      mappings: [
        mapping('signups', 'signed_up', 'A'),
        mapping('payments', 'paid', 'B', {
          inputs_schema: [...bodySchema, { key: 'token', type: 'string', secret: true }],
          inputs: { body: { value: { kind: 'B', name: '{event.event}' } }, token: { value: 'mapping-secret-1' } },
        }),
        mapping('all of them', 'paid', 'C'),
      ],
    },
  });
  t.equal(created.status, 201, created.raw);
  const id = created.body.id as string;
  const mappings = created.body.mappings as Record<string, any>[];
  t.equal(mappings.length, 3);
  t.same(mappings[1]!.inputs.token, { secret: true }, 'a secret mapping input is never answered');
  t.notMatch(created.raw, /mapping-secret-1/);
  t.ok(Array.isArray(mappings[0]!.filters.bytecode), "each mapping's filters are compiled");
  t.ok(Array.isArray(mappings[0]!.inputs.body.bytecode.name), "and its inputs' templates");

  await capture(a.project.api_token, [{ event: 'signed_up' }, { event: 'paid' }, { event: 'ignored' }]);
  await waitFor('three deliveries', async () => sink.requests.length >= 3);
  await new Promise((r) => setTimeout(r, 500));
  t.same(
    sink.requests.map((r) => r.body).sort((x, y) => x.kind.localeCompare(y.kind)),
    [
      { kind: 'A', name: 'signed_up' },
      { kind: 'B', name: 'paid' },
      { kind: 'C', name: 'paid' },
    ],
    'signed_up through the first mapping, paid through the second and the third, nothing through the top inputs',
  );

  // An update that omits the secret keeps it; the mapping still delivers.
  const kept = await call('hog_functions_partial_update', {
    key: a.key,
    params: { ...P, id },
    body: { mappings: mappings.map((m) => ({ ...m, filters: { events: m.filters.events } })) as never },
  });
  t.equal(kept.status, 200, kept.raw);
  t.same((kept.body.mappings as Record<string, any>[])[1]!.inputs.token, { secret: true });
  const row = await ctx.db.query.hog_functions.findFirst({ where: (f, { eq }) => eq(f.id, id) });
  const stored = row?.mappings as Record<string, any>[];
  t.ok(stored[1]!.encrypted_inputs.token, 'the secret stays sealed in storage');
  t.notMatch(JSON.stringify(stored), /mapping-secret-1/);
});

t.test('a mapping that does not compile is a 400 naming it; another project never sees it', async (t) => {
  const bad = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      template_id: 'template-webhook',
      inputs: { url: { value: 'http://127.0.0.1:9/' } },
      mappings: [
        mapping('fine', 'x', 'A'),
        { ...mapping('broken', 'x', 'B'), filters: { properties: [{ key: 'id', type: 'cohort', value: 3 }] } },
      ],
    },
  });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', attr: 'mappings__1__filters' });
  const badInput = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      template_id: 'template-webhook',
      inputs: { url: { value: 'http://127.0.0.1:9/' } },
      mappings: [{ ...mapping('broken', 'x', 'B'), inputs: { body: { value: '{event.' } } }],
    },
  });
  t.equal(badInput.status, 400);
  t.match(badInput.body, { attr: /^mappings__0__inputs__body/ });
  const tooMany = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      template_id: 'template-webhook',
      inputs: { url: { value: 'http://127.0.0.1:9/' } },
      mappings: Array.from({ length: 101 }, (_, i) => mapping(`m${i}`, 'x', 'A')),
    },
  });
  t.same([tooMany.status, tooMany.body.attr], [400, 'mappings'], 'at most 100 mappings');
  const list = await call('hog_functions_list', { key: b.key, params: { project_id: b.project.id } });
  t.equal(list.body.results.length, 0);
});
