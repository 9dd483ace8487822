// `npm run worker` as an operator runs it beside an API server with WORKER=0: an export run it processes
// is a job span in the trace of the request that queued it, its own metrics listener counts the run, its
// log is the server's JSON, and its configuration is checked as the server's is.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { adminClient, createTestDatabase } from './helpers/db.js';
import { attr, startCollector, until } from './helpers/otlp.js';
import { startServer, startWorkerProcess } from './helpers/server-process.js';

const collector = await startCollector(t);
const database = await createTestDatabase();
t.teardown(() => database.drop());

/** The value of the first sample of `name` whose labels include every one of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').pop());
  }
  return undefined;
}

t.test('an export run the worker processes: a job span, counted by its metrics', async (t) => {
  const key = `phx_${randomBytes(20).toString('hex')}`;
  const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint };
  const server = startServer({ DATABASE_URL: database.url, BOOTSTRAP_API_KEY: key, WORKER: '0', ...tracing });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const worker = startWorkerProcess({ DATABASE_URL: database.url, METRICS_PORT: '0', ...tracing });
  t.teardown(() => void worker.child.kill('SIGKILL'));
  const [base, metricsUrl] = await Promise.all([server.listening, worker.listening]);
  t.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'the worker serves metrics of its own');

  const traceId = randomBytes(16).toString('hex');
  const api = async (path: string, body?: unknown) => {
    const res = await fetch(`${base}/api/projects/@current/${path}`, {
      method: body ? 'POST' : 'GET',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const created = await api('batch_exports/', {
    name: 'traced',
    interval: 'hour',
    paused: true,
    destination: { type: 'NoOp', config: {} },
  });
  t.equal(created.status, 201);
  const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000;
  const { api_token } = (await api('')).body as { api_token: string };
  const event = { event: 'paid', distinct_id: 'u1', timestamp: new Date(hour + 1_800_000).toISOString() };
  const captured = await fetch(`${base}/batch/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: api_token, batch: [event] }),
  });
  t.equal(captured.status, 200, 'an event in the hour backfilled');
  const backfill = await api(`batch_exports/${created.body.id}/backfills/`, {
    start_at: new Date(hour).toISOString(),
    end_at: new Date(hour + 3_600_000).toISOString(),
  });
  t.equal(backfill.status, 201, JSON.stringify(backfill.body));

  const job = await until(
    () => collector.spans().find((s) => s.traceId === traceId && s.name === 'process batch-export-run'),
    30_000,
  );
  t.ok(job, "the run's span joins the trace of the request that queued it", { output: worker.output() });
  if (!job) return;
  t.equal(job.kind, 5, 'a consumer span');
  t.equal(collector.resourceOf(job, 'process.type'), 'worker', 'sent by the worker process');
  t.equal(attr(job, 'messaging.system'), 'pg-boss');
  t.equal(attr(job, 'job.attempt'), 1);
  const runs = await api(`batch_exports/${created.body.id}/runs/`);
  const run = (runs.body.results as { id: string; status: string }[])[0];
  t.equal(attr(job, 'batch_export_run.id'), run?.id, 'the run it exported');
  t.equal(run?.status, 'Completed');
  const request = await until(() => collector.spans().find((s) => s.spanId === job.parentSpanId));
  t.match(request, { kind: 2, name: 'POST /api/projects/:project_id/batch_exports/:batch_export_id/backfills/' });
  t.equal(collector.resourceOf(request!, 'process.type'), 'server', "a child of the server's request span");
  const statements = await until(() => {
    const found = collector.spans().filter((s) => s.parentSpanId === job.spanId && s.kind === 3);
    return found.length ? found : undefined;
  });
  t.ok(statements, "the run's statements are its children");

  const metrics = await (await fetch(metricsUrl)).text();
  t.equal(sample(metrics, 'posthog_batch_export_runs', { status: 'Completed' }), 1, 'the run, by status');
  t.ok(sample(metrics, 'posthog_job_queue_jobs', { queue: 'batch-export-run' }) !== undefined, 'queue depths');
  t.ok(sample(metrics, 'posthog_db_pool_queries', { state: 'waiting' }) !== undefined, 'its pool');
  t.equal(sample(metrics, 'posthog_db_pool_size'), 2 + 4, 'BATCH_EXPORT_CONCURRENCY + 4 connections');
  t.notMatch(metrics, /^http_request_duration_seconds_count/m, 'no API requests: the worker serves none');

  worker.child.kill('SIGTERM');
  t.equal(await worker.exited, 0);
  const lines = worker
    .output()
    .stdout.trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { level: number; msg: string; pid: number });
  t.ok(
    lines.every((l) => typeof l.level === 'number' && typeof l.pid === 'number'),
    "every line is JSON with the server's fields",
  );
  t.match(
    lines.find((l) => l.msg.startsWith('shutting down')),
    { level: 30, signal: 'SIGTERM' },
    'the shutdown is logged',
  );
  t.match(lines.at(-1), { level: 30, msg: 'batch export worker stopped' });
  t.equal(worker.output().stderr, '');
});

t.test("the worker's configuration is checked as the server's: one line, exit code 2", async (t) => {
  const bad = startWorkerProcess({ DATABASE_URL: database.url, BATCH_EXPORT_CONCURRENCY: 'two' });
  t.equal(await bad.exited, 2);
  t.equal(
    bad.output().stderr,
    'Invalid configuration: BATCH_EXPORT_CONCURRENCY="two": expected an integer of at least 1\n',
  );
  const alone = startWorkerProcess({ DATABASE_URL: '' });
  t.equal(await alone.exited, 2, 'no DATABASE_URL');
  t.match(alone.output().stderr, /^Invalid configuration: DATABASE_URL: expected a postgres:\/\/ [^\n]+\n$/);
  t.equal(`${bad.output().stdout}${alone.output().stdout}`, '', 'nothing started, nothing logged');
});

t.test('LOG_LEVEL holds for the worker as for the server', async (t) => {
  const fresh = await createTestDatabase();
  t.teardown(() => fresh.drop());
  const quiet = startWorkerProcess({ DATABASE_URL: fresh.url, LOG_LEVEL: 'warn' });
  t.teardown(() => void quiet.child.kill('SIGKILL'));
  // Started once its job engine has made the last queue it works on, in a database of its own.
  const queues = adminClient(fresh.url);
  t.teardown(() => queues.end());
  t.ok(
    await until(
      async () =>
        (await queues`select 1 from pgboss.queue where name = 'events-maintenance'`.catch(() => [])).length > 0,
    ),
    'the worker started',
  );
  quiet.child.kill('SIGTERM');
  t.equal(await quiet.exited, 0);
  t.equal(quiet.output().stdout, '', 'no info line: neither its start nor its stop');
});
