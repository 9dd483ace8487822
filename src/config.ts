// Configuration is environment variables only (DECISIONS §3), each with a default that works on a laptop.
export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  dataDir: string;
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
}

const truthy = (v: string | undefined) => /^(1|true|yes|on)$/i.test(v ?? '');

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST || '127.0.0.1',
    port: Number(env.PORT || 8000),
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: Number(env.DATABASE_POOL_SIZE || 20),
    dataDir: env.DATA_DIR || '.data',
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
  };
}
