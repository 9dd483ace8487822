import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { specJsonFor, specYamlFor } from '../http/servers.js';

export const metaHandlers = {
  async schema_retrieve(req, reply) {
    const wantsJson =
      req.query.format === 'json' || (req.query.format === undefined && /json/.test(req.headers.accept ?? ''));
    if (wantsJson) {
      await reply.type('application/vnd.oai.openapi+json').send(specJsonFor(req));
    } else {
      await reply.type('application/vnd.oai.openapi; charset=utf-8').send(specYamlFor(req));
    }
  },

  async health_retrieve() {
    return { status: 'ok' as const };
  },

  async readyz_retrieve(req) {
    try {
      await req.server.database.ping();
    } catch {
      throw ApiError.unavailable();
    }
    return { status: 'ok' as const };
  },
} satisfies SomeHandlers;
