// `filter_test_accounts: true` includes the project's test account filters in a function's filter bytecode,
// as PostHog compiles them, and a change to those filters compiles the function again (PostHog's
// refresh_affected_hog_functions): staff events stop or start reaching the destination accordingly.
import t from 'tap';
import { captureServer, waitFor } from '../helpers/batch-exports.js';
import { deliveryApp } from './delivery-app.js';

const { ctx, a, P, capture: captureTo } = await deliveryApp(t);
const capture = (events: { event: string; distinct_id: string; properties?: Record<string, unknown> }[]) =>
  captureTo(a.project.api_token, events);
const { call } = ctx;

async function setTestAccounts(filters: unknown[]) {
  const res = await call('organizations_projects_partial_update', {
    key: a.key,
    params: { organization_id: a.organization.id, id: a.project.id },
    body: { test_account_filters: filters as never },
  });
  if (res.status !== 200) throw new Error(res.raw);
}
const filtersOf = async (id: string) =>
  (await call('hog_functions_retrieve', { key: a.key, params: { ...P, id } })).body.filters as Record<string, unknown>;

await setTestAccounts([{ key: 'email', type: 'person', operator: 'not_icontains', value: 'internal.io' }]);
await capture([
  { event: '$identify', distinct_id: 'staff', properties: { $set: { email: 'bob@internal.io' } } },
  { event: '$identify', distinct_id: 'customer', properties: { $set: { email: 'ann@x.io' } } },
]);

t.test('staff events are filtered out while the project calls them test accounts', async (t) => {
  const sink = await captureServer(t);
  const created = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      enabled: true,
      template_id: 'template-webhook',
      inputs: { url: { value: sink.url }, body: { value: { who: '{event.distinct_id}' } } },
      filters: { events: [{ id: 'signed_up', type: 'events' }], filter_test_accounts: true },
    },
  });
  t.equal(created.status, 201, created.raw);
  const id = created.body.id as string;
  t.match(JSON.stringify((await filtersOf(id)).bytecode), /internal\.io/, 'the bytecode holds the test filter');

  await capture([
    { event: 'signed_up', distinct_id: 'staff' },
    { event: 'signed_up', distinct_id: 'customer' },
  ]);
  const totals = async () =>
    (await call('hog_functions_metrics_totals_retrieve', { key: a.key, params: { ...P, id } })).body.totals;
  await waitFor('both events judged', async () => {
    const n = await totals();
    return n.succeeded === 1 && n.filtered === 1;
  });
  t.same(
    sink.requests.map((r) => r.body),
    [{ who: 'customer' }],
    'only the customer is delivered',
  );

  // The project stops filtering test accounts: the function is compiled again, and staff events flow.
  await setTestAccounts([]);
  t.notMatch(JSON.stringify((await filtersOf(id)).bytecode), /internal\.io/, 'compiled again without it');
  await capture([{ event: 'signed_up', distinct_id: 'staff' }]);
  await waitFor('the staff event delivered', async () => sink.requests.length === 2);
  t.same(sink.requests[1]!.body, { who: 'staff' });
});

t.test('test account filters a real-time filter cannot evaluate are a 400 on filters', async (t) => {
  await setTestAccounts([{ key: 'id', type: 'cohort', value: 3 }]);
  const res = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      template_id: 'template-webhook',
      inputs: { url: { value: 'http://127.0.0.1:9/' } },
      filters: { events: [{ id: 'signed_up', type: 'events' }], filter_test_accounts: true },
    },
  });
  t.equal(res.status, 400);
  t.match(res.body, { type: 'validation_error', attr: 'filters', detail: /cohorts/ });
  await setTestAccounts([]);
});
