// Prometheus metrics as an operator scrapes them: a spawned server with METRICS_PORT, its own
// listener, the request, ingestion, database, job queue and batch export numbers; never on the API port.
import t from 'tap';
import { openTestDatabase } from './helpers/db.js';
import { startServer } from './helpers/server-process.js';

const test = await openTestDatabase();
t.teardown(async () => {
  await test.database.close();
  await test.drop();
});

/** The value of the first sample of `name` whose labels include every one of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').pop());
  }
  return undefined;
}

t.test('METRICS_PORT serves Prometheus text on a listener of its own', async (t) => {
  const key = 'phx_metricstestkey0123456789abcdefghijklmnopq';
  const server = startServer({ DATABASE_URL: test.url, BOOTSTRAP_API_KEY: key, METRICS_PORT: '0' });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const api = await server.listening;
  let metricsUrl: string | undefined;
  for (let i = 0; i < 200 && !metricsUrl; i++) {
    metricsUrl = /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"[^\n]*"msg":"metrics listening"/.exec(
      server.output().stdout,
    )?.[1];
    if (!metricsUrl) await new Promise((r) => setTimeout(r, 25));
  }
  t.ok(metricsUrl, 'the metrics address is logged', { output: server.output().stderr.slice(-2000) });
  t.not(new URL(metricsUrl!).port, new URL(api).port, 'apart from the API port');
  t.equal((await fetch(`${api}/metrics`)).status, 404, 'the API port has no /metrics');

  const auth = { authorization: `Bearer ${key}` };
  const projects = (await (await fetch(`${api}/api/projects/`, { headers: auth })).json()) as {
    results: { id: number; api_token: string }[];
  };
  const token = projects.results[0]!.api_token;
  const project = `${api}/api/projects/${projects.results[0]!.id}`;
  const json = { ...auth, 'content-type': 'application/json' };
  const drop = await fetch(`${project}/hog_functions/`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      type: 'transformation',
      enabled: true,
      template_id: 'template-drop-events',
      filters: { events: [{ id: 'noise', type: 'events' }] },
    }),
  });
  t.equal(drop.status, 201, 'a transformation that drops `noise` events');
  const events = [1, 2, 3].map((n) => ({ event: 'e', distinct_id: `d${n}` }));
  const batch = { api_key: token, batch: [...events, { event: 'noise', distinct_id: 'd1' }] };
  const sent = await fetch(`${api}/batch/`, { method: 'POST', body: JSON.stringify(batch) });
  t.equal(sent.status, 200);
  const query = await fetch(`${project}/query/`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'select count() from events' } }),
  });
  t.same(((await query.json()) as { results: unknown }).results, [[3]], 'the dropped event was not stored');
  const refused = await fetch(`${api}/batch/`, { method: 'POST', body: JSON.stringify({ ...batch, api_key: 'nope' }) });
  t.equal(refused.status, 401);

  const res = await fetch(metricsUrl!);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  t.equal(
    sample(text, 'http_request_duration_seconds_count', {
      operation: 'projects_list',
      method: 'GET',
      status: '200',
    }),
    1,
    'one projects_list request, by operation, method and status',
  );
  t.equal(sample(text, 'http_request_duration_seconds_count', { operation: 'none', status: '404' }), 1);
  t.equal(sample(text, 'posthog_ingested_events_total'), 3, 'the three events stored');
  t.equal(sample(text, 'posthog_dropped_events_total'), 1, 'the one the transformation dropped');
  t.equal(sample(text, 'posthog_query_queue_wait_seconds_count'), 1, 'the query, which found a slot free');
  // Its wait is the time to take a free slot: well under a second even on a loaded machine (1 ms was not).
  t.equal(sample(text, 'posthog_query_queue_wait_seconds_bucket', { le: '1' }), 1, 'and did not wait for a slot');
  t.equal(sample(text, 'posthog_db_pool_queries', { state: 'waiting' }), 0, 'no query waits for a connection');
  t.ok((sample(text, 'posthog_db_pool_queries', { state: 'running' }) ?? -1) >= 0, 'running ones are counted');
  t.equal(sample(text, 'posthog_capture_refused_total', { status: '401' }), 1, 'and the refused request');
  t.ok((sample(text, 'posthog_db_connections', { state: 'idle' }) ?? 0) >= 1, 'database connections by state');
  t.equal(sample(text, 'posthog_db_pool_size'), 10);
  t.ok(sample(text, 'nodejs_eventloop_lag_p99_seconds') !== undefined, 'event-loop lag');
  t.ok(sample(text, 'process_resident_memory_bytes') !== undefined, 'process memory');
  t.ok(
    sample(text, 'posthog_job_queue_jobs', { queue: 'batch-export-run', state: 'ready' }) !== undefined,
    'the job queue depth',
  );
  t.notMatch(text, new RegExp(token), 'no tenant token in the metrics');

  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0, 'the metrics listener does not hold the shutdown');
});

t.test('without METRICS_PORT nothing listens for metrics', async (t) => {
  const server = startServer({ DATABASE_URL: test.url });
  t.teardown(() => void server.child.kill('SIGKILL'));
  await server.listening;
  t.notMatch(server.output().stdout, /metrics listening/);
  server.child.kill('SIGTERM');
  await server.exited;
});
