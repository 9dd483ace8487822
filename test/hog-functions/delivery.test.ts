import t from 'tap';
import { deliveryApp } from './delivery-app.js';
import { captureServer, waitFor } from '../helpers/batch-exports.js';

const { ctx, a, b, P, capture } = await deliveryApp(t);
const { call, db } = ctx;

async function webhook(key: string, projectId: number, url: string, extra: Record<string, unknown> = {}) {
  const res = await call('hog_functions_create', {
    key,
    params: { project_id: projectId },
    body: {
      type: 'destination',
      enabled: true,
      template_id: 'template-webhook',
      inputs: {
        url: { value: url },
        body: { value: { name: '{event.event}', plan: '{event.properties.plan}' } },
      },
      filters: { events: [{ id: 'signed_up', type: 'events' }] },
      ...extra,
    },
  });
  if (res.status !== 201) throw new Error(res.raw);
  return res.body.id;
}

const totals = async (id: string) =>
  (await call('hog_functions_metrics_totals_retrieve', { key: a.key, params: { ...P, id } })).body.totals;

t.test('matching events are delivered with the templated body; others are filtered', async (t) => {
  const sink = await captureServer(t);
  const id = await webhook(a.key, a.project.id, sink.url);
  const started = Date.now();
  await capture(a.project.api_token, [
    { event: 'signed_up', properties: { plan: 'pro' } },
    { event: 'pageview' },
    { event: 'signed_up', properties: { plan: 'free' } },
  ]);
  t.ok(Date.now() - started < 2000, 'capture answers without waiting for delivery');
  await waitFor('two deliveries', async () => sink.requests.length >= 2);
  t.same(
    sink.requests.map((r) => r.body).sort((x, y) => x.plan.localeCompare(y.plan)),
    [
      { name: 'signed_up', plan: 'free' },
      { name: 'signed_up', plan: 'pro' },
    ],
  );
  await waitFor('metrics', async () => (await totals(id)).succeeded === 2);
  t.match(await totals(id), { succeeded: 2, filtered: 1 });
  const logs = await call('hog_functions_logs_retrieve', { key: a.key, params: { ...P, id } });
  t.ok(logs.body.results.length > 0);
  t.ok(logs.body.results.every((l) => l.level === l.level.toUpperCase()));
  t.ok(logs.body.results.every((l) => l.instance_id.length > 0));
});

t.test('a failing endpoint is retried on 503 until it answers, 3 attempts at most', async (t) => {
  const flaky = await captureServer(t, (_req, n) => (n < 2 ? 503 : 200));
  const id = await webhook(a.key, a.project.id, flaky.url);
  await capture(a.project.api_token, [{ event: 'signed_up', properties: { plan: 'retry' } }]);
  await waitFor('the third attempt to land', async () => flaky.requests.length === 1, 30_000);
  await waitFor('success counted', async () => (await totals(id)).succeeded === 1);
  const down = await captureServer(t, () => 500);
  const dead = await webhook(a.key, a.project.id, down.url);
  await capture(a.project.api_token, [{ event: 'signed_up', properties: { plan: 'dead' } }]);
  await waitFor('the dead letter', async () => (await totals(dead)).failed === 1, 30_000);
  const logs = await call('hog_functions_logs_retrieve', {
    key: a.key,
    params: { ...P, id: dead },
    query: { level: 'ERROR' },
  });
  t.match(logs.body.results[0]?.message, /failed after 3 attempts \(dead letter\)/);
  const notRetried = await captureServer(t, () => 400);
  const four = await webhook(a.key, a.project.id, notRetried.url);
  await capture(a.project.api_token, [{ event: 'signed_up' }]);
  await waitFor('the 400 handled once', async () => (await totals(four)).succeeded === 1);
});

t.test('masking lets one event per hash through in its window', async (t) => {
  const sink = await captureServer(t);
  const id = await webhook(a.key, a.project.id, sink.url, {
    masking: { ttl: 60, hash: '{event.distinct_id}', threshold: null },
  });
  await capture(a.project.api_token, [{ event: 'signed_up' }, { event: 'signed_up' }, { event: 'signed_up' }]);
  await waitFor('one delivery', async () => (await totals(id)).succeeded === 1);
  t.match(await totals(id), { succeeded: 1, masked: 2 });
});

t.test('disabled and deleted functions deliver nothing; other projects never reach us', async (t) => {
  const sink = await captureServer(t);
  const off = await webhook(a.key, a.project.id, sink.url, { enabled: false });
  const deleted = await webhook(a.key, a.project.id, sink.url);
  await call('hog_functions_partial_update', { key: a.key, params: { ...P, id: deleted }, body: { deleted: true } });
  await capture(b.project.api_token, [{ event: 'signed_up', properties: { plan: 'theirs' } }]);
  await capture(a.project.api_token, [{ event: 'signed_up', properties: { plan: 'mine' } }]);
  const control = await captureServer(t);
  await webhook(a.key, a.project.id, control.url);
  await capture(a.project.api_token, [{ event: 'signed_up', properties: { plan: 'control' } }]);
  await waitFor('the control delivery', async () => control.requests.length === 1);
  t.equal(sink.requests.length, 0);
  t.same(await totals(off), {});
});
