// OpenTelemetry tracing, on when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans of HTTP requests
// (src/http/tracing.ts), of postgres.js queries (src/db/client.ts) and of jobs (children of what queued them),
// sent over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`. Off, the SDK is never loaded.
import { setTracer } from './core/tracing.js';

export interface TracingSettings {
  otlpEndpoint: string | undefined;
  serviceName: string;
}

/** Starts the SDK when configured; the returned function flushes the spans still buffered and stops it. */
export async function startTracing(settings: TracingSettings, process: string): Promise<() => Promise<void>> {
  if (!settings.otlpEndpoint) return async () => {};
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const exporter = new OTLPTraceExporter({ url: `${settings.otlpEndpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'process.type': process }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 })],
  });
  // The AsyncLocalStorage context (a query's span is its request's child) and W3C traceparent propagation.
  provider.register();
  setTracer(provider.getTracer('posthog-api'));
  return async () => {
    setTracer(undefined);
    await provider.shutdown().catch(() => {});
  };
}
