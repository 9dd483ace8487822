import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { CAPTURE_BODY_LIMIT, decodeCapture, InflatesTooFar, type RawCapture } from '../capture/decode.js';
import {
  DecodersBusy,
  configureDecoders,
  decodeOffThread,
  IN_PLACE_INFLATE_BYTES,
  OFF_THREAD_BYTES,
} from '../capture/decode-thread.js';
import type { HandlerTable } from './openapi.js';
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

/** The paths of the capture and remote config operations, as patterns of the request URL. */
const capturePaths: RegExp[] = Object.entries(spec.paths)
  .filter(([, item]) =>
    Object.values(item).some(
      (op) => op && typeof op === 'object' && (op as Record<string, unknown>)['x-no-fastify-config'],
    ),
  )
  .map(([path]) => {
    const pattern = path
      .replace(/\/+$/, '')
      .replace(/\./g, '\\.')
      .replace(/\{\w+\}/g, '[^/?]+');
    return new RegExp(`^${pattern}/?(\\?|$)`);
  });

/** Whether a request URL is a capture route's (those take large uploads, and a longer deadline). */
export function isCaptureUrl(url: string): boolean {
  return capturePaths.some((re) => re.test(url));
}

/**
 * The capture and remote config operations (marked `x-no-fastify-config`, so the OpenAPI glue leaves
 * them alone) are routed here, in a scope of their own: they take any media type, gzip with or without a header,
 * form-encoded base64 and bodies up to 20 MiB, while every API route keeps strict JSON and 1 MiB.
 * Their handlers are still the contract's, from the same handler map.
 */
export async function registerCapture(app: FastifyInstance, handlers: HandlerTable): Promise<void> {
  configureDecoders({ threads: app.config.captureDecodeThreads, queue: app.config.captureDecodeQueue });
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
      // What a body inflates to is known only by inflating it (a gzip trailer counts only its last
      // member): small bodies are decoded here up to a small inflated size, anything more on a thread.
      const offThread = () =>
        decodeOffThread(raw, () => req.raw.socket?.destroyed === true).then(
          (decoded) => done(null, decoded),
          (err: Error) => {
            if (err instanceof DecodersBusy) req.server.abortLog.count('decode_queue_full');
            done(err, undefined);
          },
        );
      if (raw.body.length >= OFF_THREAD_BYTES) return void offThread();
      let decoded: unknown;
      try {
        decoded = decodeCapture(raw, IN_PLACE_INFLATE_BYTES);
      } catch (err) {
        if (err instanceof InflatesTooFar) return void offThread();
        return done(err as Error, undefined);
      }
      done(null, decoded);
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
        const operationId = operation.operationId as string;
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
