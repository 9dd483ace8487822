import { parseAllowList } from './net/policy.js';

// Configuration is environment variables only, each with a default that works on a laptop.
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  dataDir: string;
  /** Key of the secrets stored in the database (32 bytes, base64 or hex); unset means `<dataDir>/encryption.key`. */
  encryptionKey: string | undefined;
  bootstrapApiKey: string | undefined;
  bootstrapEmail: string;
  logLevel: string;
  siteUrl: string | undefined;
  rateLimits: boolean;
  /** PostHog's personal API key throttles, as `<n>/<second|minute|hour|day>`. */
  rateLimitBurst: string;
  rateLimitSustained: string;
  worker: boolean;
  /** SMTP server for invite e-mails; unset means no e-mail is sent. */
  emailHost: string | undefined;
  emailPort: number;
  emailUser: string | undefined;
  emailPassword: string | undefined;
  emailFrom: string;
  /** Require STARTTLS (EMAIL_USE_TLS) or connect over TLS from the start (EMAIL_USE_SSL). */
  emailUseTls: boolean;
  emailUseSsl: boolean;
  /** DNS servers for domain verification (`host` or `host:port`); unset means the system's. */
  dnsServers: string[] | undefined;
  /** Where `repository` reads the plugin catalogue (a JSON list); unset means no catalogue. */
  pluginRepositoryUrl: string | undefined;
  /** The largest plugin archive downloaded, and the most any one file in it may unpack to. */
  pluginArchiveMaxBytes: number;
  /** The folder `local` plugins (`file:` urls) must live under; unset refuses local plugins. */
  pluginLocalDir: string | undefined;
  /**
   * CIDRs of private and reserved addresses that tenant-supplied connections (plugin urls, batch
   * export destinations) may reach; every other such address is refused. Empty by default.
   */
  allowPrivateNetworks: string[];
  /** Batch export runs one worker process exports at once. */
  exportConcurrency: number;
  /** Hog function deliveries: seconds before a failed delivery's retry (growing), and per-function concurrency. */
  hogRetryDelaySeconds: number;
  hogFunctionConcurrency: number;
  /** Records read per batch by an export. */
  exportBatchSize: number;
  /** Times a failed export run is retried before it is Failed. */
  exportRetries: number;
  /** How long one Query API statement may run before it is cancelled. */
  queryTimeoutSeconds: number;
  /** Query API statements one process runs at once; more wait their turn, so queries cannot take every connection. */
  queryConcurrency: number;
  /**
   * Longest an API operation may take before it is answered 503: a last resort against a database
   * call that never settles (longer than the Query API's own timeout, which answers first).
   */
  requestDeadlineSeconds: number;
  /** Seconds without a heartbeat after which a run's worker is presumed gone and the run is retried. */
  exportHeartbeatTimeout: number;
  /** Port of the Prometheus listener (`/metrics`); unset means no metrics are kept or served. */
  metricsPort: number | undefined;
  /** Address the metrics listener binds (default: HOST). */
  metricsHost: string;
  // The listener's limits against slow and numerous clients (src/http/listener.ts).
  /** Capture decoder threads, and capture bodies that may wait for one before a 503. */
  captureDecodeThreads: number;
  captureDecodeQueue: number;
  /** Seconds an API request (headers and body) may take to arrive; capture bodies get the second. */
  requestTimeoutSeconds: number;
  captureRequestTimeoutSeconds: number;
  /** Seconds a request's headers may take to arrive. */
  headersTimeoutSeconds: number;
  /** After `bodyRateGraceSeconds`, a body still arriving must have averaged this many bytes a second. */
  bodyMinBytesPerSecond: number;
  bodyRateGraceSeconds: number;
  /** Seconds a connection may stay silent (nothing read or written) mid-request. */
  socketIdleTimeoutSeconds: number;
  keepAliveTimeoutSeconds: number;
  maxRequestsPerSocket: number;
  /** Open connections at once, in all and from one client address (clamped by the open-file limit). */
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /** Open files kept back from connections, beyond the database pool (files, threads, outgoing sockets). */
  fdReserve: number;
  /** Connections past the cap still let in, to answer only the health check. */
  healthConnections: number;
  /**
   * Addresses or CIDRs of reverse proxies whose `X-Forwarded-For` is believed: their connections are
   * not capped per address, the forwarded client's open requests are.
   */
  trustProxy: string[];
  /** Cut-off clients are logged once per cause per this many seconds. */
  abortLogIntervalSeconds: number;
  /**
   * Of the `queryConcurrency` slots, how many one organization may hold at once (default half), so the
   * others always find one; and how many of its queries may wait for a slot before more are a 429.
   */
  queryConcurrencyPerOrganization: number;
  queryQueuePerOrganization: number;
  /** PostHog's Query API throttles per personal API key (`api_queries_burst`, `api_queries_sustained`). */
  rateLimitQueryBurst: string;
  rateLimitQuerySustained: string;
  /** The largest answer a query may give, in bytes of JSON (over it: a 400). */
  queryMaxBytes: number;
  /** Per query transaction: PostgreSQL's temp_file_limit and work_mem, in MB. */
  queryTempFileLimitMb: number;
  queryWorkMemMb: number;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

function positiveNumber(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value && Number.isFinite(n) && n > 0 ? n : fallback;
}

const truthy = (v: string | undefined) => /^(1|true|yes|on)$/i.test(v ?? '');

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST || '127.0.0.1',
    port: Number(env.PORT || 8000),
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: Number(env.DATABASE_POOL_SIZE || 10),
    dataDir: env.DATA_DIR || '.data',
    encryptionKey: env.ENCRYPTION_KEY || undefined,
    bootstrapApiKey: env.BOOTSTRAP_API_KEY || undefined,
    bootstrapEmail: env.BOOTSTRAP_EMAIL || 'admin@example.com',
    logLevel: env.LOG_LEVEL || 'info',
    siteUrl: env.SITE_URL ? env.SITE_URL.replace(/\/+$/, '') : undefined,
    rateLimits: (env.RATE_LIMITS ?? 'on') !== 'off',
    rateLimitBurst: env.RATE_LIMIT_BURST || '480/minute',
    rateLimitSustained: env.RATE_LIMIT_SUSTAINED || '4800/hour',
    worker: (env.WORKER ?? '1') !== '0',
    emailHost: env.EMAIL_HOST || undefined,
    emailPort: Number(env.EMAIL_PORT || 25),
    emailUser: env.EMAIL_USER || undefined,
    emailPassword: env.EMAIL_PASSWORD || undefined,
    emailFrom: env.EMAIL_FROM || 'root@localhost',
    emailUseTls: truthy(env.EMAIL_USE_TLS),
    emailUseSsl: truthy(env.EMAIL_USE_SSL),
    dnsServers: env.DNS_SERVERS
      ? env.DNS_SERVERS.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined,
    pluginRepositoryUrl: env.PLUGIN_REPOSITORY_URL || undefined,
    pluginArchiveMaxBytes: Number(env.PLUGIN_ARCHIVE_MAX_BYTES || 20 * 1024 * 1024),
    pluginLocalDir: env.PLUGIN_LOCAL_DIR || undefined,
    allowPrivateNetworks: parseAllowList(env.ALLOW_PRIVATE_NETWORKS),
    exportConcurrency: positiveInt(env.BATCH_EXPORT_CONCURRENCY, 2),
    hogRetryDelaySeconds: positiveInt(env.HOG_RETRY_DELAY_SECONDS, 5),
    hogFunctionConcurrency: positiveInt(env.HOG_FUNCTION_CONCURRENCY, 4),
    exportBatchSize: positiveInt(env.BATCH_EXPORT_BATCH_SIZE, 20000),
    exportRetries: env.BATCH_EXPORT_RETRIES === '0' ? 0 : positiveInt(env.BATCH_EXPORT_RETRIES, 5),
    queryTimeoutSeconds: positiveNumber(env.QUERY_TIMEOUT_SECONDS, 30),
    queryConcurrency: positiveInt(env.QUERY_CONCURRENCY, 4),
    requestDeadlineSeconds: positiveNumber(env.REQUEST_DEADLINE_SECONDS, 60),
    exportHeartbeatTimeout: Math.max(6, positiveInt(env.BATCH_EXPORT_HEARTBEAT_TIMEOUT, 60)),
    metricsPort: env.METRICS_PORT ? Number(env.METRICS_PORT) : undefined,
    metricsHost: env.METRICS_HOST || env.HOST || '127.0.0.1',
    captureDecodeThreads: positiveInt(env.CAPTURE_DECODE_THREADS, 1),
    captureDecodeQueue: positiveInt(env.CAPTURE_DECODE_QUEUE, 32),
    requestTimeoutSeconds: positiveNumber(env.REQUEST_TIMEOUT_SECONDS, 30),
    captureRequestTimeoutSeconds: positiveNumber(env.CAPTURE_REQUEST_TIMEOUT_SECONDS, 120),
    headersTimeoutSeconds: positiveNumber(env.HEADERS_TIMEOUT_SECONDS, 15),
    bodyMinBytesPerSecond: env.BODY_MIN_BYTES_PER_SECOND === '0' ? 0 : positiveInt(env.BODY_MIN_BYTES_PER_SECOND, 1024),
    bodyRateGraceSeconds: positiveNumber(env.BODY_RATE_GRACE_SECONDS, 5),
    socketIdleTimeoutSeconds: positiveNumber(env.SOCKET_IDLE_TIMEOUT_SECONDS, 120),
    keepAliveTimeoutSeconds: positiveNumber(env.KEEP_ALIVE_TIMEOUT_SECONDS, 72),
    maxRequestsPerSocket: positiveInt(env.MAX_REQUESTS_PER_SOCKET, 1000),
    maxConnections: positiveInt(env.MAX_CONNECTIONS, 4096),
    maxConnectionsPerAddress: positiveInt(env.MAX_CONNECTIONS_PER_ADDRESS, 256),
    fdReserve: positiveInt(env.FD_RESERVE, 128),
    healthConnections: env.HEALTH_CONNECTIONS === '0' ? 0 : positiveInt(env.HEALTH_CONNECTIONS, 8),
    trustProxy: (env.TRUST_PROXY ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    abortLogIntervalSeconds: positiveNumber(env.ABORT_LOG_INTERVAL_SECONDS, 60),
    ...queryLimits(env),
  };
}

function queryLimits(env: NodeJS.ProcessEnv) {
  const total = positiveInt(env.QUERY_CONCURRENCY, 4);
  return {
    queryConcurrencyPerOrganization: Math.min(
      total,
      positiveInt(env.QUERY_CONCURRENCY_PER_ORGANIZATION, Math.max(1, Math.floor(total / 2))),
    ),
    queryQueuePerOrganization: positiveInt(env.QUERY_QUEUE_PER_ORGANIZATION, 50),
    rateLimitQueryBurst: env.RATE_LIMIT_QUERY_BURST || '240/minute',
    rateLimitQuerySustained: env.RATE_LIMIT_QUERY_SUSTAINED || '2400/hour',
    queryMaxBytes: positiveInt(env.QUERY_MAX_BYTES, 50 * 1024 * 1024),
    queryTempFileLimitMb: positiveInt(env.QUERY_TEMP_FILE_LIMIT_MB, 512),
    queryWorkMemMb: positiveInt(env.QUERY_WORK_MEM_MB, 16),
  };
}
