// A server span per request when tracing is on: a child of the caller's `traceparent`, and the parent of
// every query the request runs (its handlers run inside the span's context).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { context, propagation, type Span, SpanKind, SpanStatusCode, trace, tracing } from '../core/tracing.js';
import { redactUrl } from './logging.js';

const spans = new WeakMap<FastifyRequest, Span>();

export function traceRequests(app: FastifyInstance): void {
  const tracer = tracing();
  if (!tracer) return;
  app.addHook('onRequest', (req, _reply, done) => {
    const parent = propagation.extract(context.active(), req.headers);
    const route = req.routeOptions.url;
    const span = tracer.startSpan(
      route ? `${req.method} ${route}` : req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          // As in the log: a sharing token, an invite id or a key in the path is a credential.
          'url.path': redactUrl(req.url.split('?')[0]!),
          ...(route ? { 'http.route': route } : {}),
          'client.address': req.ip,
          'http.request.id': String(req.id),
        },
      },
      parent,
    );
    spans.set(req, span);
    // The rest of the request (hooks, handler, its queries) runs in the span's context.
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook('onRequestAbort', async (req) => {
    spans.get(req)?.setStatus({ code: SpanStatusCode.ERROR, message: 'client closed the connection' }).end();
    spans.delete(req);
  });
  app.addHook('onResponse', async (req, reply) => {
    const span = spans.get(req);
    if (!span) return;
    const operation = (req.routeOptions.config as { operationId?: string } | undefined)?.operationId;
    if (operation) span.setAttribute('operation.id', operation);
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
}
