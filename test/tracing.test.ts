// With OTEL_EXPORTER_OTLP_ENDPOINT set, the server sends OpenTelemetry spans over OTLP/HTTP: a server
// span per request (a child of the caller's traceparent) and a client span per query, the request's child.
// A collector stand-in (an HTTP server in this test) receives them. They also show what a request costs in
// statements.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createTestDatabase } from './helpers/db.js';
import { attr, startCollector, until } from './helpers/otlp.js';
import { startServer } from './helpers/server-process.js';

const collector = await startCollector(t);
const { endpoint, exports, spans } = collector;

t.test('a request and its queries arrive as spans of one trace', async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const key = `phx_${randomBytes(20).toString('hex')}`;
  const server = startServer({
    DATABASE_URL: database.url,
    BOOTSTRAP_API_KEY: key,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: 'analytics-api-test',
  });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;

  const traceId = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const res = await fetch(`${base}/api/projects/@current/dashboards/`, {
    headers: { authorization: `Bearer ${key}`, traceparent: `00-${traceId}-${callerSpan}-01` },
  });
  t.equal(res.status, 200);

  const request = await until(() =>
    spans().find(
      (s) => s.traceId === traceId && s.kind === 2 && attr(s, 'http.route')?.toString().includes('dashboards'),
    ),
  );
  t.ok(request, 'a server span for the request');
  if (!request) return;
  t.equal(request.parentSpanId, callerSpan, "the caller's traceparent is its parent");
  t.equal(request.name, 'GET /api/projects/:project_id/dashboards/');
  t.equal(attr(request, 'http.response.status_code'), 200);
  t.equal(attr(request, 'operation.id'), 'dashboards_list');
  t.equal(attr(request, 'http.request.id'), res.headers.get('x-request-id'), 'the request id names the span');

  const queries = await until(() => {
    const found = spans().filter((s) => s.traceId === traceId && s.kind === 3);
    return found.some((s) => /from "?dashboards"?/i.test(String(attr(s, 'db.query.text')))) ? found : undefined;
  });
  t.ok(queries, "the dashboards query is a client span of the request's trace");
  const query = queries?.find((s) => /from "?dashboards"?/i.test(String(attr(s, 'db.query.text'))));
  if (query) {
    t.equal(query.parentSpanId, request.spanId, "a child of the request's span");
    t.equal(attr(query, 'db.system.name'), 'postgresql');
    t.match(query.name, /^postgresql SELECT$/);
  }

  // A query with a warm key reads its project's timezone from the principal: no statement of its trace
  // looks a project up by id.
  const queryTrace = randomBytes(16).toString('hex');
  const ran = await fetch(`${base}/api/projects/@current/query/`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      traceparent: `00-${queryTrace}-${callerSpan}-01`,
    },
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'select toStartOfDay(now())' } }),
  });
  t.equal(ran.status, 200);
  const queried = await until(() => spans().find((s) => s.traceId === queryTrace && s.kind === 2));
  t.ok(queried, 'a span for the query request');
  const statements = spans()
    .filter((s) => s.traceId === queryTrace && s.kind === 3)
    .map((s) => String(attr(s, 'db.query.text')));
  t.ok(
    statements.some((text) => text.includes('transaction_read_only')),
    "the query's statements are in its trace",
  );
  t.same(
    statements.filter((text) => /\bfrom\s+"?projects"?[^;]*\bwhere\s+("?projects"?\.)?"?id"?\s*=/i.test(text)),
    [],
    'no project is looked up by id',
  );

  // A credential in the path reaches no span, as it reaches no log line.
  const shareTrace = randomBytes(16).toString('hex');
  const shareToken = randomBytes(12).toString('hex');
  await fetch(`${base}/shared/${shareToken}.json`, {
    headers: { traceparent: `00-${shareTrace}-${callerSpan}-01` },
  });
  const shared = await until(() => spans().find((s) => s.traceId === shareTrace && s.kind === 2));
  t.ok(shared, 'a span for the shared page');
  t.notMatch(JSON.stringify(exports.map((e) => e.body)), shareToken, 'the sharing token is not exported');
  t.match(String(shared && attr(shared, 'url.path')), /^\/shared\/\[redacted\]/);

  const sent = exports[0]!;
  t.equal(sent.path, '/v1/traces');
  t.match(sent.contentType, /application\/json/);
  const service = sent.body.resourceSpans[0]!.resource.attributes.find((a) => a.key === 'service.name');
  t.equal(service?.value.stringValue, 'analytics-api-test');
});

t.test("a destination's delivery is a job span in the trace of the request that captured its event", async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const key = `phx_${randomBytes(20).toString('hex')}`;
  const server = startServer({
    DATABASE_URL: database.url,
    BOOTSTRAP_API_KEY: key,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;
  const sink = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  t.teardown(() => sink.close());
  const api = (path: string, body?: unknown) =>
    fetch(`${base}/api/projects/@current/${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
  const { api_token } = (await (await api('')).json()) as { api_token: string };
  const created = await api('hog_functions/', {
    type: 'destination',
    enabled: true,
    template_id: 'template-webhook',
    inputs: { url: { value: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook` } },
  });
  t.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };

  const traceId = randomBytes(16).toString('hex');
  const captured = await fetch(`${base}/batch/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    body: JSON.stringify({ api_key: api_token, batch: [{ event: 'signed_up', distinct_id: 'u1', properties: {} }] }),
  });
  t.equal(captured.status, 200);

  const job = await until(() =>
    spans().find((s) => s.traceId === traceId && s.name === 'process hog-function-delivery'),
  );
  t.ok(job, "the delivery's span joins the capture request's trace");
  if (!job) return;
  t.equal(job.kind, 5, 'a consumer span');
  t.equal(attr(job, 'hog_function.id'), id);
  t.equal(attr(job, 'messaging.system'), 'pg-boss');
  t.equal(attr(job, 'job.attempt'), 1);
  const request = spans().find((s) => s.traceId === traceId && s.kind === 2);
  t.ok(request && job.parentSpanId === request.spanId, 'a child of the request that queued it');
  const statements = await until(() => {
    const found = spans().filter((s) => s.parentSpanId === job.spanId && s.kind === 3);
    return found.length ? found : undefined;
  });
  t.ok(statements, "the delivery's statements are its children");
});
