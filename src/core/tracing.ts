// Spans for OpenTelemetry, when OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on (src/tracing.ts starts the
// SDK and sets the tracer here). Off, `tracer` stays undefined and every helper is one comparison.
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

let tracer: Tracer | undefined;

export function setTracer(t: Tracer | undefined): void {
  tracer = t;
}

export const tracing = (): Tracer | undefined => tracer;

function fail(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** W3C trace headers of the active span, carried in a job's data so its processing joins the trace. */
export type TraceCarrier = Record<string, string>;

/** The carrier of the span active here (say, the request that queues a job); undefined when tracing is off. */
export function traceCarrier(): TraceCarrier | undefined {
  if (!tracer) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length ? carrier : undefined;
}

/**
 * `fn` inside a span of its own, a child of the span active where it is called, or, for a job, of the span
 * that queued it (its `carrier`), so a delivery shows in the trace of the request that captured its event.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
  carrier?: TraceCarrier,
): Promise<T> {
  if (!tracer) return fn();
  const parent = carrier ? propagation.extract(context.active(), carrier) : context.active();
  return tracer.startActiveSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

interface Thenable {
  then(onFulfilled?: (v: unknown) => unknown, onRejected?: (e: unknown) => unknown): unknown;
}

/**
 * A postgres.js query, traced from the moment it runs (postgres.js runs a query when it is awaited,
 * after drizzle has set how it wants the rows) until its answer. `query` is returned, itself.
 */
export function traceQuery<T extends Thenable>(query: T, text: string): T {
  if (!tracer) return query;
  const t = tracer;
  const then = query.then;
  const parent = context.active();
  // biome-ignore lint/suspicious/noThenProperty: the query is a promise; its own `then` is wrapped, not added.
  query.then = function (this: T, onFulfilled, onRejected) {
    const span = t.startSpan(
      `postgresql ${/^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY'}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system.name': 'postgresql', 'db.system': 'postgresql', 'db.query.text': text },
      },
      parent,
    );
    return then.call(
      this,
      (value: unknown) => {
        span.end();
        return onFulfilled ? onFulfilled(value) : value;
      },
      (err: unknown) => {
        fail(span, err);
        span.end();
        if (onRejected) return onRejected(err);
        throw err;
      },
    );
  };
  return query;
}

export { context, propagation, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
