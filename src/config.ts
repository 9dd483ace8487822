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
  /** Where `repository` reads the plugin catalogue (a JSON list); unset means no catalogue. */
  pluginRepositoryUrl: string | undefined;
  /** The largest plugin archive downloaded, and the most any one file in it may unpack to. */
  pluginArchiveMaxBytes: number;
  /** The folder `local` plugins (`file:` urls) must live under; unset refuses local plugins. */
  pluginLocalDir: string | undefined;
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
    pluginRepositoryUrl: env.PLUGIN_REPOSITORY_URL || undefined,
    pluginArchiveMaxBytes: Number(env.PLUGIN_ARCHIVE_MAX_BYTES || 20 * 1024 * 1024),
    pluginLocalDir: env.PLUGIN_LOCAL_DIR || undefined,
  };
}
