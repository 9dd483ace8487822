import { flushHits } from './insights/cache-queries.js';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { createJobEngine, type JobEngine } from './batch-exports/index.js';
import type { Config } from './config.js';
import type { Database, Db } from './db/client.js';
import { AuthCache } from './auth/cache.js';
import { isCaptureUrl, registerCapture } from './http/capture.js';
import { clientErrorHandler, errorHandler } from './http/errors.js';
import { ApiError } from './core/errors.js';
import { trackInFlight } from './http/in-flight.js';
import { RequestLogController } from './http/logging.js';
import { requestId } from './http/request-id.js';
import { recordRequestMetrics } from './http/request-metrics.js';
import { traceRequests } from './http/tracing.js';
import { watchClients } from './http/client-gone.js';
import { startFolding } from './event-rollups/fold.js';
import { AsyncQueries } from './query/async.js';
import { forwardedTrust, guardListener } from './http/listener.js';
import { prepareQuerySandbox, prepareReplicaSandbox } from './query/role-queries.js';
import { queryEngine, type QueryEngine } from './query/run.js';
import { installNotFound } from './http/not-found.js';
import { registerOperations } from './http/openapi.js';
import { handlers } from './operations/index.js';
import { serversOf } from './http/servers.js';
import { spec } from './http/spec.js';
import { parseRate, RateLimiter } from './http/rate-limit.js';
import { keepReadingUnreadBody } from './http/unread-body.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    database: Database;
    db: Db;
    /** Reads that may lag a moment (the events listing): the read replica, else `db` (Database.read). */
    readDb: Db;
    authCache: AuthCache;
    /** Absent when RATE_LIMITS=off. */
    rateLimiter?: RateLimiter;
    /** PostHog's Query API throttles (`api_queries_burst`, `api_queries_sustained`), instead of the others there. */
    queryRateLimiter?: RateLimiter;
    /**
     * Password attempts on a shared page, per share and client address: each check is a deliberately slow
     * hash, so without a cap anyone could both guess passwords and tie up the CPU. Absent when RATE_LIMITS=off.
     */
    shareUnlockLimiter?: RateLimiter;
    /** Shared-page reads over a viewer's own date range (each may compute every insight of the share). */
    shareRangeLimiter?: RateLimiter;
    /** What runs Query API statements: slots shared fairly between organizations, and their limits. */
    queries: QueryEngine;
    /** The job engine that batch export runs are queued on. */
    jobs: JobEngine;
    /** The asynchronous Query API queries this process runs. */
    asyncQueries: AsyncQueries;
  }
}

export interface AppOptions {
  config: Config;
  database: Database;
  logger?: FastifyServerOptions['logger'];
  /** The process's job engine; when omitted the app makes one that only queues, and stops it on close. */
  jobs?: JobEngine;
}

export const API_BODY_LIMIT = 1024 * 1024;

/** The one factory for the HTTP app: the server and every test build it here, with the same options. */
export async function buildApp({ config, database, logger = false, jobs }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger,
    logController: new RequestLogController(),
    bodyLimit: API_BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true },
    // Query strings such as `?tags=a&tags=b` arrive as arrays.
    requestIdHeader: false,
    genReqId: requestId,
    // While draining on SIGTERM, a request that arrives on an open keep-alive connection is served
    // (with `Connection: close`) rather than answered with Fastify's own 503 body, which is not in
    // the contract's error shape; the database closes only after the last request.
    return503OnClosing: false,
    // A path segment that is over-long or not valid percent-encoding names nothing: PostHog's 404,
    // in the error shape, rather than Fastify's own 414/400 bodies.
    frameworkErrors: (_err, _req, reply) => void (reply as FastifyReply).code(404).send(ApiError.notFound().body),
    // Requests refused by Node's HTTP parser (431, a bad Content-Length) are answered in the error shape too.
    clientErrorHandler,
    trustProxy: forwardedTrust(config.trustProxy),
  });
  // First, so every later hook, the handler and its queries run inside the request's span (when tracing is on).
  traceRequests(app);
  watchClients(app);
  // Deadlines, connection caps and the open-file budget of the listener (src/http/listener.ts).
  guardListener(app, config, isCaptureUrl);
  const authCache = new AuthCache(database);
  await authCache.start();
  app.decorate('config', config);
  app.decorate('database', database);
  app.decorate('db', database.db);
  app.decorate('readDb', database.read);
  app.decorate('authCache', authCache);
  if (config.rateLimits) {
    // Counted in the database, so the limits hold for every process on it together (src/http/rate-limit.ts).
    const limiter = (scope: string, burst: string, sustained: string) =>
      new RateLimiter(database.db, scope, [parseRate(burst), parseRate(sustained)]);
    app.decorate('rateLimiter', limiter('api', config.rateLimitBurst, config.rateLimitSustained));
    app.decorate('queryRateLimiter', limiter('query', config.rateLimitQueryBurst, config.rateLimitQuerySustained));
    app.decorate('shareUnlockLimiter', limiter('share_unlock', '20/minute', '200/hour'));
    app.decorate('shareRangeLimiter', limiter('share_range', '30/minute', '300/hour'));
  }
  const sandbox = await prepareQuerySandbox(database.db, {
    tempFileLimitMb: config.queryTempFileLimitMb,
    workMemMb: config.queryWorkMemMb,
  });
  if (sandbox.warning) app.log.warn(sandbox.warning);
  let read: { db: Db; limits: typeof sandbox.limits } | undefined;
  if (database.readUrl) {
    const replica = await prepareReplicaSandbox(database.read, sandbox.limits);
    if (replica.warning) app.log.warn(replica.warning);
    if (replica.limits) read = { db: database.read, limits: replica.limits };
  }
  const queries = queryEngine(database.db, config, sandbox.limits, read);
  app.decorate('queries', queries);
  const engine = jobs ?? createJobEngine(database, config, false, (msg, err) => app.log.error({ err }, msg));
  app.decorate('jobs', engine);
  if (!jobs) app.addHook('onClose', async () => engine.stop());
  const asyncQueries = new AsyncQueries(queries, database, (msg, err) => app.log.error({ err }, msg));
  await asyncQueries.listen();
  app.decorate('asyncQueries', asyncQueries);
  // On close (the SIGTERM drain included) the process's unfinished asynchronous queries are failed and
  // their statements stopped, while the database is still open.
  app.addHook('onClose', async () => asyncQueries.stop());
  const stopFolding = startFolding(database.db, (msg, err) => app.log.warn({ err }, msg));
  app.addHook('onClose', stopFolding);
  // The result cache's hits this process counted and has not written yet.
  app.addHook('onClose', async () =>
    flushHits(database.db).catch((err) => app.log.warn({ err }, 'writing the result cache hits failed')),
  );

  // Bodies are validated per media type and the API operations only have JSON bodies: a text/plain
  // body would reach a handler unvalidated, so only JSON is parsed (anything else is a 415). The
  // capture routes (registerCapture) parse their own bodies in a scope of their own.
  app.removeContentTypeParser('text/plain');
  trackInFlight(app);
  app.setErrorHandler(errorHandler);
  installNotFound(app);
  app.addHook('onSend', keepReadingUnreadBody);
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    // A page that says who may frame it (the shared pages, which may be embedded) says it in its CSP.
    if (!String(reply.getHeader('content-security-policy') ?? '').includes('frame-ancestors')) {
      reply.header('x-frame-options', 'DENY');
    }
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-request-id', req.id);
  });

  if (config.metricsPort !== undefined) recordRequestMetrics(app);

  await app.register(swagger, { mode: 'static', specification: { document: spec as never } });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // "Try it out" calls the server the page came from (or SITE_URL), not the contract's neutral default.
    transformSpecificationClone: false,
    transformSpecification: (document, req) => ({ ...document, servers: serversOf(req) }),
  });
  await registerOperations(app, handlers);
  await registerCapture(app, handlers);
  return app;
}
