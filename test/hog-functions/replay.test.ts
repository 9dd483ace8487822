// Replay (not in PostHog): stored events of a range queued into a destination through the live delivery queue,
// each matching event once, against a real HTTP server; the range and the tenant wall checked.
import t from 'tap';
import { captureServer, waitFor } from '../helpers/batch-exports.js';
import { deliveryApp } from './delivery-app.js';

const { ctx, a, b, P } = await deliveryApp(t);
const { call, db } = ctx;

async function capture(token: string, events: { event: string; timestamp: string; n: number }[]) {
  const batch = events.map((e) => ({
    event: e.event,
    distinct_id: 'u1',
    timestamp: e.timestamp,
    properties: { n: e.n },
  }));
  const res = await ctx.inject({ method: 'POST', url: '/batch/', payload: { api_key: token, batch } });
  if (res.statusCode !== 200) throw new Error(`capture answered ${res.statusCode}: ${res.body}`);
}

t.test('a replay delivers each stored matching event of its range once; other projects never', async (t) => {
  const day = (d: number, n: number, event = 'signed_up') => ({ event, n, timestamp: `2026-03-0${d}T12:00:00Z` });
  // Stored before the destination exists: only a replay can send them.
  await capture(a.project.api_token, [day(1, 1), day(2, 2), day(2, 3, 'pageview'), day(3, 4), day(5, 5)]);
  await capture(b.project.api_token, [day(2, 99)]);
  const sink = await captureServer(t);
  const created = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'destination',
      enabled: true,
      template_id: 'template-webhook',
      inputs: { url: { value: sink.url }, body: { value: { n: '{event.properties.n}' } } },
      filters: { events: [{ id: 'signed_up', type: 'events' }] },
    },
  });
  t.equal(created.status, 201);
  const id = created.body.id;
  const replay = await call('hog_functions_replay_create', {
    key: a.key,
    params: { ...P, id },
    body: { date_from: '2026-03-02T00:00:00Z', date_to: '2026-03-04T00:00:00Z' },
  });
  t.equal(replay.status, 201);
  // Days 2 and 3: events 2 and 4 match (3 is a pageview; 1 and 5 lie outside; 99 is another project's).
  t.match(replay.body, { total: 2, enqueued: 2 });
  await waitFor('two deliveries', async () => sink.requests.length >= 2);
  await new Promise((r) => setTimeout(r, 1500));
  t.same(sink.requests.map((r) => Number((r.body as { n: unknown }).n)).sort(), [2, 4], 'each once, nothing else');
  await waitFor('the replay completed', async () => {
    const list = await call('hog_functions_replay_list', { key: a.key, params: { ...P, id } });
    return list.body[0]?.status === 'completed';
  });
  const [done] = (await call('hog_functions_replay_list', { key: a.key, params: { ...P, id } })).body;
  t.match(done, { total: 2, delivered: 2, failed: 0 });

  const inverted = await call('hog_functions_replay_create', {
    key: a.key,
    params: { ...P, id },
    body: { date_from: '2026-03-04T00:00:00Z', date_to: '2026-03-02T00:00:00Z' },
  });
  t.equal(inverted.status, 400);
  t.equal(inverted.body.attr, 'date_to');
  const foreign = await call('hog_functions_replay_create', {
    key: b.key,
    params: { project_id: b.project.id, id },
    body: { date_from: '2026-03-02T00:00:00Z', date_to: '2026-03-04T00:00:00Z' },
  });
  t.equal(foreign.status, 404, "another project's function cannot be replayed from there");
});
