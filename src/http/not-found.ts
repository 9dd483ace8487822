import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { ApiError } from '../core/errors.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Fastify answers an unsupported method on a known path with 404; PostHog says 405. A second router
 * holding just the registered paths tells the two apart.
 */
export function installNotFound(app: FastifyInstance): void {
  const known = FindMyWay({ ignoreTrailingSlash: true });
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD' && !known.find(method as 'GET', route.url)) known.on(method as 'GET', route.url, () => {});
    }
  });
  app.setNotFoundHandler(async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => known.find(m, path));
    if (allowed.length) {
      const err = ApiError.methodNotAllowed(req.method);
      return reply.code(405).header('allow', allowed.join(', ')).send(err.body);
    }
    return reply.code(404).send(ApiError.notFound('Endpoint not found.').body);
  });
}
