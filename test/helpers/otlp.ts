// An OTLP/HTTP collector stand-in: an HTTP server that keeps every JSON export sent to it, for tests of
// the spans a spawned server or worker sends when OTEL_EXPORTER_OTLP_ENDPOINT names it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}
interface Export {
  resourceSpans: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}
export interface Received {
  path: string;
  contentType: string;
  body: Export;
}

export interface Collector {
  endpoint: string;
  exports: Received[];
  spans(): OtlpSpan[];
  /** The resource attribute `key` of the export that carried `span`. */
  resourceOf(span: OtlpSpan, key: string): string | undefined;
}

export async function startCollector(t: Test): Promise<Collector> {
  const exports: Received[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body: JSON.parse(text) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const resources = () => exports.flatMap((e) => e.body.resourceSpans);
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    spans: () => resources().flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)),
    resourceOf(span, key) {
      const resource = resources().find((r) => r.scopeSpans.some((s) => s.spans.includes(span)));
      return resource?.resource.attributes.find((a) => a.key === key)?.value.stringValue;
    },
  };
}

/** A span's attribute, a number when it is an integer one. */
export function attr(span: OtlpSpan, key: string): string | number | undefined {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
}

/** What `what` finds within `ms`, looking every 100 ms. */
export async function until<T>(
  what: () => T | undefined | Promise<T | undefined>,
  ms = 15_000,
): Promise<T | undefined> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const found = await what();
    if (found) return found;
  }
  return undefined;
}
