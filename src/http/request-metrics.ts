import type { FastifyInstance } from 'fastify';
import { enableMetrics, httpDuration, refusedCaptures } from '../metrics/registry.js';

/** Every answer's time by operationId (`none` for paths no operation has), method and status. */
export function recordRequestMetrics(app: FastifyInstance): void {
  enableMetrics();
  app.addHook('onResponse', async (req, reply) => {
    const operation = (req.routeOptions.config as { operationId?: string } | undefined)?.operationId ?? 'none';
    const status = String(reply.statusCode);
    httpDuration.observe({ operation, method: req.method, status }, reply.elapsedTime / 1000);
    if (operation.startsWith('capture_') && reply.statusCode >= 400) refusedCaptures.inc({ status });
  });
}
