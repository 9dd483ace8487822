import { Ajv } from 'ajv';
import { BlockList } from 'node:net';
import { addCidr } from './net/addresses.js';
import { parseKey } from './secrets/key.js';

// Configuration is environment variables only, each with a default that works on a laptop, checked as a
// whole before anything starts (`VARIABLES` below).
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  /**
   * A streaming replica of DATABASE_URL's server that the Query API, insight computation, the events
   * listing and batch export reads use; unset means they read from DATABASE_URL's.
   */
  databaseReadUrl: string | undefined;
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
   * Addresses or CIDRs of reverse proxies whose `X-Forwarded-For` is believed, or how many hops of it
   * are proxies (every connection then comes from one): their connections are not capped per address,
   * the forwarded client's open requests are.
   */
  trustProxy: string[] | number;
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
  /** OTLP/HTTP collector that receives traces (`<endpoint>/v1/traces`); unset means no tracing. */
  otlpEndpoint: string | undefined;
  serviceName: string;
  /** Hog function deliveries: seconds before a failed delivery's retry (growing), and per-function concurrency. */
  hogRetryDelaySeconds: number;
  hogFunctionConcurrency: number;
  /** Events older than this many days are dropped, a whole month's partition at a time; unset keeps everything. */
  eventsRetentionDays: number | undefined;
}

/**
 * One variable of the environment: its JSON Schema (checked by Ajv, strings coerced to numbers), the
 * default used when it is unset or empty, and what is allowed, in words, for errors and the README.
 */
interface Variable {
  schema: Record<string, unknown>;
  allowed: string;
  default?: string | number;
  /** Its value is never printed. */
  secret?: true;
}

const text = (fallback?: string): Variable => ({ schema: { type: 'string' }, allowed: 'any text', default: fallback });
const integer = (fallback: number | undefined, minimum: number, maximum?: number): Variable => ({
  schema: { type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) },
  allowed: maximum === undefined ? `an integer of at least ${minimum}` : `an integer from ${minimum} to ${maximum}`,
  default: fallback,
});
// 0 lets the system pick a free port.
const port = (fallback?: number) => integer(fallback, 0, 65535);
const positive = (fallback: number): Variable => ({
  schema: { type: 'number', exclusiveMinimum: 0 },
  allowed: 'a number above 0',
  default: fallback,
});
const oneOf = (fallback: string, values: string[]): Variable => ({
  schema: { enum: values },
  allowed: `one of ${values.join(', ')}`,
  default: fallback,
});
const SWITCH = ['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'];
const flag = (fallback: 'on' | 'off' | '1' | '0'): Variable => ({
  schema: { enum: [...new Set([...SWITCH, ...SWITCH.map((w) => w.toUpperCase())])] },
  allowed: 'on/off, 1/0, true/false or yes/no',
  default: fallback,
});
const formatted = (format: keyof typeof FORMATS, fallback?: string): Variable => ({
  schema: { type: 'string', format },
  allowed: FORMATS[format].allowed,
  default: fallback,
});

const isCidr = (s: string) => addCidr(new BlockList(), s);
const HOPS = /^\s*([1-9]|[12]\d|3[0-2])\s*$/;
const items = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
const FORMATS = {
  url: { allowed: 'an http:// or https:// URL', check: (s: string) => /^https?:\/\/[^\s/?#]+[^\s]*$/.test(s) },
  'postgres-url': {
    allowed: 'a postgres:// or postgresql:// URL',
    check: (s: string) => /^postgres(ql)?:\/\/\S*$/.test(s),
  },
  rate: {
    allowed: '<count>/<second|minute|hour|day>, e.g. 480/minute',
    check: (s: string) => /^\s*[1-9]\d*\/(second|minute|hour|day)\s*$/.test(s),
  },
  cidrs: { allowed: 'a comma list of IP addresses or CIDRs', check: (s: string) => items(s).every(isCidr) },
  proxies: {
    allowed: 'a hop count from 1 to 32, or a comma list of IP addresses or CIDRs',
    check: (s: string) => HOPS.test(s) || items(s).every(isCidr),
  },
  'dns-servers': {
    allowed: 'a comma list of host or host:port',
    check: (s: string) => items(s).every((x) => /^(\[[0-9a-f:.]+\]|[^\s:/[\]]+|[0-9a-f:.]+)(:\d{1,5})?$/i.test(x)),
  },
  'encryption-key': {
    allowed: '32 bytes as base64 or as 64 hex digits (openssl rand -base64 32)',
    check: (s: string) => {
      try {
        return Boolean(parseKey(s, 'ENCRYPTION_KEY'));
      } catch {
        return false;
      }
    },
  },
} satisfies Record<string, { allowed: string; check: (s: string) => boolean }>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Every variable the server, the worker and the CLI read: one entry each. A new variable is a line here,
 * a field of `Config` and its line in `loadConfig`; the README's table must name it (a test compares).
 */
export const VARIABLES = {
  HOST: text('127.0.0.1'),
  PORT: port(8000),
  DATABASE_URL: { ...formatted('postgres-url'), secret: true },
  DATABASE_READ_URL: { ...formatted('postgres-url'), secret: true },
  DATABASE_POOL_SIZE: integer(10, 1, 1000),
  DATA_DIR: text('.data'),
  ENCRYPTION_KEY: { ...formatted('encryption-key'), secret: true },
  BOOTSTRAP_API_KEY: { ...text(), secret: true },
  BOOTSTRAP_EMAIL: text('admin@example.com'),
  LOG_LEVEL: oneOf('info', LOG_LEVELS),
  SITE_URL: formatted('url'),
  RATE_LIMITS: flag('on'),
  RATE_LIMIT_BURST: formatted('rate', '480/minute'),
  RATE_LIMIT_SUSTAINED: formatted('rate', '4800/hour'),
  INSTANCE_TAG: text('none'),
  WORKER: flag('1'),
  EMAIL_HOST: text(),
  EMAIL_PORT: port(25),
  EMAIL_USER: text(),
  EMAIL_PASSWORD: { ...text(), secret: true },
  EMAIL_FROM: text('root@localhost'),
  EMAIL_USE_TLS: flag('off'),
  EMAIL_USE_SSL: flag('off'),
  DNS_SERVERS: formatted('dns-servers'),
  PLUGIN_REPOSITORY_URL: formatted('url'),
  PLUGIN_ARCHIVE_MAX_BYTES: integer(20 * 1024 * 1024, 1),
  PLUGIN_LOCAL_DIR: text(),
  ALLOW_PRIVATE_NETWORKS: formatted('cidrs'),
  METRICS_PORT: port(),
  METRICS_HOST: text(),
  BATCH_EXPORT_CONCURRENCY: integer(2, 1),
  BATCH_EXPORT_BATCH_SIZE: integer(20000, 1),
  BATCH_EXPORT_RETRIES: integer(5, 0),
  BATCH_EXPORT_HEARTBEAT_TIMEOUT: integer(60, 6),
  QUERY_TIMEOUT_SECONDS: positive(30),
  QUERY_CONCURRENCY: integer(4, 1),
  QUERY_CONCURRENCY_PER_ORGANIZATION: integer(undefined, 1),
  QUERY_QUEUE_PER_ORGANIZATION: integer(50, 1),
  RATE_LIMIT_QUERY_BURST: formatted('rate', '240/minute'),
  RATE_LIMIT_QUERY_SUSTAINED: formatted('rate', '2400/hour'),
  QUERY_MAX_BYTES: integer(50 * 1024 * 1024, 1),
  QUERY_TEMP_FILE_LIMIT_MB: integer(512, 1),
  QUERY_WORK_MEM_MB: integer(16, 1),
  HOG_RETRY_DELAY_SECONDS: integer(5, 1),
  HOG_FUNCTION_CONCURRENCY: integer(16, 1),
  EVENTS_RETENTION_DAYS: integer(undefined, 1, 365_000),
  REQUEST_DEADLINE_SECONDS: positive(60),
  CAPTURE_DECODE_THREADS: integer(1, 1),
  CAPTURE_DECODE_QUEUE: integer(32, 1),
  REQUEST_TIMEOUT_SECONDS: positive(30),
  CAPTURE_REQUEST_TIMEOUT_SECONDS: positive(120),
  HEADERS_TIMEOUT_SECONDS: positive(15),
  BODY_MIN_BYTES_PER_SECOND: integer(1024, 0),
  BODY_RATE_GRACE_SECONDS: positive(5),
  SOCKET_IDLE_TIMEOUT_SECONDS: positive(120),
  KEEP_ALIVE_TIMEOUT_SECONDS: positive(72),
  MAX_REQUESTS_PER_SOCKET: integer(1000, 1),
  MAX_CONNECTIONS: integer(4096, 1),
  MAX_CONNECTIONS_PER_ADDRESS: integer(256, 1),
  FD_RESERVE: integer(128, 1),
  HEALTH_CONNECTIONS: integer(8, 0),
  TRUST_PROXY: formatted('proxies'),
  ABORT_LOG_INTERVAL_SECONDS: positive(60),
  OTEL_EXPORTER_OTLP_ENDPOINT: formatted('url'),
  OTEL_SERVICE_NAME: text('posthog-api'),
} satisfies Record<string, Variable>;

type Name = keyof typeof VARIABLES;

/** The whole environment's schema, for Ajv (and for anyone who wants to read it). */
export const ENV_SCHEMA = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(VARIABLES as Record<Name, Variable>).map(([name, v]) => [
      name,
      v.default === undefined ? v.schema : { ...v.schema, default: v.default },
    ]),
  ),
};

const ajv = new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true, strict: false });
for (const [name, { check }] of Object.entries(FORMATS)) ajv.addFormat(name, check);
const validateEnv = ajv.compile(ENV_SCHEMA);

/** A configuration the server cannot start with; its message is one line naming every bad variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration: ${problems.join('; ')}`);
  }
}

/** What a variable was set to, as an error may show it: secrets hidden, a URL's password too. */
function shown(name: Name, value: unknown): string {
  if ((VARIABLES[name] as Variable).secret && name !== 'DATABASE_URL' && name !== 'DATABASE_READ_URL')
    return '(hidden)';
  return JSON.stringify(String(value).replace(/(\/\/[^/:@\s]*:)[^@/\s]*@/, '$1***@'));
}

/** The environment checked against `VARIABLES`: unset and empty variables take their defaults. */
function readEnv(env: NodeJS.ProcessEnv): Record<Name, string | number | undefined> {
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(VARIABLES)) if (env[name]) values[name] = env[name];
  if (validateEnv(values)) {
    if (values.METRICS_PORT && values.METRICS_PORT === values.PORT)
      throw new ConfigError([`METRICS_PORT=${values.METRICS_PORT}: expected a port other than PORT's`]);
    // A replica of the embedded cluster cannot exist: it belongs to one process and streams to nobody.
    if (values.DATABASE_READ_URL && !values.DATABASE_URL)
      throw new ConfigError(['DATABASE_READ_URL: expected DATABASE_URL to be set too (a replica of its server)']);
    return values as Record<Name, string | number | undefined>;
  }
  const bad = new Set<Name>();
  for (const error of validateEnv.errors ?? []) bad.add(error.instancePath.slice(1) as Name);
  throw new ConfigError(
    [...bad].map((name) => `${name}=${shown(name, env[name])}: expected ${(VARIABLES[name] as Variable).allowed}`),
  );
}

/** The configuration, or one line on stderr and exit code 2 before anything is opened or written. */
export function configOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const v = readEnv(env);
  const str = (name: Name) => v[name] as string;
  const opt = (name: Name) => v[name] as string | undefined;
  const num = (name: Name) => v[name] as number;
  const on = (name: Name) => /^(1|true|yes|on)$/i.test(str(name));
  const list = (name: Name) => (v[name] === undefined ? [] : items(str(name)));
  const queryConcurrency = num('QUERY_CONCURRENCY');
  return {
    host: str('HOST'),
    port: num('PORT'),
    databaseUrl: opt('DATABASE_URL'),
    databaseReadUrl: opt('DATABASE_READ_URL'),
    databasePoolSize: num('DATABASE_POOL_SIZE'),
    dataDir: str('DATA_DIR'),
    encryptionKey: opt('ENCRYPTION_KEY'),
    bootstrapApiKey: opt('BOOTSTRAP_API_KEY'),
    bootstrapEmail: str('BOOTSTRAP_EMAIL'),
    logLevel: str('LOG_LEVEL'),
    siteUrl: opt('SITE_URL')?.replace(/\/+$/, ''),
    rateLimits: on('RATE_LIMITS'),
    rateLimitBurst: str('RATE_LIMIT_BURST').trim(),
    rateLimitSustained: str('RATE_LIMIT_SUSTAINED').trim(),
    worker: on('WORKER'),
    emailHost: opt('EMAIL_HOST'),
    emailPort: num('EMAIL_PORT'),
    emailUser: opt('EMAIL_USER'),
    emailPassword: opt('EMAIL_PASSWORD'),
    emailFrom: str('EMAIL_FROM'),
    emailUseTls: on('EMAIL_USE_TLS'),
    emailUseSsl: on('EMAIL_USE_SSL'),
    dnsServers: v.DNS_SERVERS === undefined ? undefined : list('DNS_SERVERS'),
    pluginRepositoryUrl: opt('PLUGIN_REPOSITORY_URL'),
    pluginArchiveMaxBytes: num('PLUGIN_ARCHIVE_MAX_BYTES'),
    pluginLocalDir: opt('PLUGIN_LOCAL_DIR'),
    allowPrivateNetworks: list('ALLOW_PRIVATE_NETWORKS'),
    exportConcurrency: num('BATCH_EXPORT_CONCURRENCY'),
    exportBatchSize: num('BATCH_EXPORT_BATCH_SIZE'),
    exportRetries: num('BATCH_EXPORT_RETRIES'),
    queryTimeoutSeconds: num('QUERY_TIMEOUT_SECONDS'),
    queryConcurrency,
    requestDeadlineSeconds: num('REQUEST_DEADLINE_SECONDS'),
    exportHeartbeatTimeout: num('BATCH_EXPORT_HEARTBEAT_TIMEOUT'),
    metricsPort: v.METRICS_PORT === undefined ? undefined : num('METRICS_PORT'),
    metricsHost: opt('METRICS_HOST') ?? str('HOST'),
    captureDecodeThreads: num('CAPTURE_DECODE_THREADS'),
    captureDecodeQueue: num('CAPTURE_DECODE_QUEUE'),
    requestTimeoutSeconds: num('REQUEST_TIMEOUT_SECONDS'),
    captureRequestTimeoutSeconds: num('CAPTURE_REQUEST_TIMEOUT_SECONDS'),
    headersTimeoutSeconds: num('HEADERS_TIMEOUT_SECONDS'),
    bodyMinBytesPerSecond: num('BODY_MIN_BYTES_PER_SECOND'),
    bodyRateGraceSeconds: num('BODY_RATE_GRACE_SECONDS'),
    socketIdleTimeoutSeconds: num('SOCKET_IDLE_TIMEOUT_SECONDS'),
    keepAliveTimeoutSeconds: num('KEEP_ALIVE_TIMEOUT_SECONDS'),
    maxRequestsPerSocket: num('MAX_REQUESTS_PER_SOCKET'),
    maxConnections: num('MAX_CONNECTIONS'),
    maxConnectionsPerAddress: num('MAX_CONNECTIONS_PER_ADDRESS'),
    fdReserve: num('FD_RESERVE'),
    healthConnections: num('HEALTH_CONNECTIONS'),
    trustProxy: HOPS.test(str('TRUST_PROXY') ?? '') ? Number(str('TRUST_PROXY')) : list('TRUST_PROXY'),
    abortLogIntervalSeconds: num('ABORT_LOG_INTERVAL_SECONDS'),
    // An organization's share of the query slots: half by default, never more than all of them.
    queryConcurrencyPerOrganization: Math.min(
      queryConcurrency,
      (v.QUERY_CONCURRENCY_PER_ORGANIZATION as number | undefined) ?? Math.max(1, Math.floor(queryConcurrency / 2)),
    ),
    queryQueuePerOrganization: num('QUERY_QUEUE_PER_ORGANIZATION'),
    rateLimitQueryBurst: str('RATE_LIMIT_QUERY_BURST').trim(),
    rateLimitQuerySustained: str('RATE_LIMIT_QUERY_SUSTAINED').trim(),
    queryMaxBytes: num('QUERY_MAX_BYTES'),
    queryTempFileLimitMb: num('QUERY_TEMP_FILE_LIMIT_MB'),
    queryWorkMemMb: num('QUERY_WORK_MEM_MB'),
    otlpEndpoint: opt('OTEL_EXPORTER_OTLP_ENDPOINT'),
    serviceName: str('OTEL_SERVICE_NAME'),
    hogRetryDelaySeconds: num('HOG_RETRY_DELAY_SECONDS'),
    hogFunctionConcurrency: num('HOG_FUNCTION_CONCURRENCY'),
    eventsRetentionDays: v.EVENTS_RETENTION_DAYS as number | undefined,
  };
}
