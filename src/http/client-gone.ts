import type { FastifyInstance } from 'fastify';
import { answeringWith } from '../core/client-gone.js';

/** Every request's hooks and handler run with its answer in hand (see core/client-gone.ts). */
export function watchClients(app: FastifyInstance): void {
  app.addHook('onRequest', (_req, reply, done) => answeringWith(reply.raw, done));
}
