import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { CAPTURE_BODY_LIMIT, decodeCapture, decodedSizeHint, type RawCapture } from '../capture/decode.js';
import { decodeOffThread, OFF_THREAD_BYTES } from '../capture/decode-thread.js';
import { handlers } from '../operations/index.js';
import { spec } from './spec.js';

declare module 'fastify' {
  interface FastifyRequest {
    receivedAt?: Date;
  }
}

/**
 * Browsers' posthog-js reads the answer cross-origin; PostHog's capture, flags and remote config
 * answer CORS like this (the caller's origin, with credentials).
 */
function allowOrigin(req: FastifyRequest, reply: FastifyReply): void {
  const origin = req.headers.origin;
  if (!origin) return;
  let allowed: string;
  try {
    const url = new URL(origin);
    allowed = `${url.protocol}//${url.host}`;
  } catch {
    return;
  }
  reply.header('access-control-allow-origin', allowed);
  reply.header('access-control-allow-credentials', 'true');
  reply.header('access-control-allow-methods', 'GET, POST, OPTIONS');
  reply.header('access-control-allow-headers', 'X-Requested-With,Content-Type');
  reply.header('vary', 'Origin');
}

/**
 * The capture and remote config operations (marked `x-no-fastify-config`, so the OpenAPI glue leaves
 * them alone) are routed here, in a scope of their own: they take any media type, gzip with or without a header,
 * form-encoded base64 and bodies up to 20 MiB, while every API route keeps strict JSON and 1 MiB.
 * Their handlers are still the contract's, from the same handler map.
 */
export async function registerCapture(app: FastifyInstance): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CAPTURE_BODY_LIMIT }, (req, body, done) => {
      const query = req.query as Record<string, unknown>;
      const raw: RawCapture & { body: Buffer } = {
        body: body as Buffer,
        contentType: req.headers['content-type'],
        contentEncoding: req.headers['content-encoding'],
        compression: typeof query.compression === 'string' ? query.compression : undefined,
      };
      if (decodedSizeHint(raw.body) >= OFF_THREAD_BYTES) {
        decodeOffThread(raw).then(
          (decoded) => done(null, decoded),
          (err: Error) => done(err, undefined),
        );
        return;
      }
      try {
        done(null, decodeCapture(raw));
      } catch (err) {
        done(err as Error, undefined);
      }
    });
    // Clock-skew correction measures from arrival, not from after a large body was read and inflated.
    scope.addHook('onRequest', async (req) => {
      req.receivedAt = new Date();
    });
    scope.addHook('onSend', async (req, reply) => allowOrigin(req, reply));

    for (const [path, item] of Object.entries(spec.paths)) {
      const url = path.replace(/\{(\w+)\}/g, ':$1');
      let routed = false;
      for (const [method, operation] of Object.entries(item)) {
        if (!operation || typeof operation !== 'object' || !operation['x-no-fastify-config']) continue;
        const operationId = operation.operationId as keyof typeof handlers;
        const handler = handlers[operationId];
        if (!handler) throw new Error(`No handler for operation ${operationId}`);
        scope.route({
          method: method.toUpperCase() as RouteOptions['method'],
          url,
          bodyLimit: CAPTURE_BODY_LIMIT,
          config: { operationId } as RouteOptions['config'],
          handler: handler as RouteOptions['handler'],
        });
        routed = true;
      }
      // The CORS preflight, answered by the onSend hook's headers.
      if (routed) scope.options(url, async (_req, reply) => reply.code(200).send());
    }
  });
}
