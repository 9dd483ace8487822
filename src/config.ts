// Configuration is environment variables only (DECISIONS §3), each with a default that works on a laptop.
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  dataDir: string;
  bootstrapApiKey: string | undefined;
  bootstrapEmail: string;
  logLevel: string;
  siteUrl: string | undefined;
  rateLimits: boolean;
  worker: boolean;
  /** Batch export runs one worker process exports at once. */
  exportConcurrency: number;
  /** Records read per batch by an export. */
  exportBatchSize: number;
  /** Times a failed export run is retried before it is Failed. */
  exportRetries: number;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST || '127.0.0.1',
    port: Number(env.PORT || 8000),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.DATA_DIR || '.data',
    bootstrapApiKey: env.BOOTSTRAP_API_KEY || undefined,
    bootstrapEmail: env.BOOTSTRAP_EMAIL || 'admin@example.com',
    logLevel: env.LOG_LEVEL || 'info',
    siteUrl: env.SITE_URL ? env.SITE_URL.replace(/\/+$/, '') : undefined,
    rateLimits: (env.RATE_LIMITS ?? 'on') !== 'off',
    worker: (env.WORKER ?? '1') !== '0',
    exportConcurrency: positiveInt(env.BATCH_EXPORT_CONCURRENCY, 2),
    exportBatchSize: positiveInt(env.BATCH_EXPORT_BATCH_SIZE, 5000),
    exportRetries: env.BATCH_EXPORT_RETRIES === '0' ? 0 : positiveInt(env.BATCH_EXPORT_RETRIES, 5),
  };
}
