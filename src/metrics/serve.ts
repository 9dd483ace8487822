import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './registry.js';

/**
 * Prometheus text on a listener of its own (`METRICS_PORT`), never on the API port: what a scrape
 * reads is for the operator's network, not for tenants.
 */
export async function serveMetrics(host: string, port: number): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
    );
  });
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`, server };
}
