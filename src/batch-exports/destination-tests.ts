import type postgres from 'postgres';
import { guardedFetch, NetworkPolicyError, type TenantNetwork } from '../net/index.js';
import type { DestinationType, HttpConfig, PostgresConfig, S3Config } from './destination-config.js';
import { destinationClient } from './destinations/postgres.js';
import { awsS3, s3Client } from './destinations/s3.js';

/**
 * PostHog's destination tests: a destination type's checks as an ordered list of steps, each run on
 * its own (a client runs step 0, and the next only when it passed). A step reports `Passed`,
 * `Failed` with a message, or `Skipped`; it never throws. Every connection goes through the tenant
 * network policy, exactly as the export's own connections do.
 */
export type StepStatus = 'Passed' | 'Failed' | 'Skipped';
export interface StepResult {
  status: StepStatus;
  message: string | null;
}
export interface StepJson {
  name: string;
  description: string;
  result: StepResult | null;
}

type Config = Record<string, unknown>;

/** One step of a destination's test, typed by the config it reads. */
interface TypedStep<C> {
  name: string;
  description: string;
  /** Whether the config has what the step needs; otherwise it fails without connecting. */
  configured(config: Config): config is Config & C;
  run(config: C, network: TenantNetwork): Promise<StepResult>;
}

/** A step as the table holds it: undefined from `attempt` when the config lacks what it needs. */
interface TestStep {
  name: string;
  description: string;
  attempt(config: Config, network: TenantNetwork): Promise<StepResult> | undefined;
}

const testStep = <C>(s: TypedStep<C>): TestStep => ({
  name: s.name,
  description: s.description,
  attempt: (config, network) => (s.configured(config) ? s.run(config, network) : undefined),
});

const isFilled = (c: Config, field: string) => typeof c[field] === 'string' && c[field] !== '';

const TIMEOUT_MS = 10_000;
const passed: StepResult = { status: 'Passed', message: null };
const failed = (message: string): StepResult => ({ status: 'Failed', message });
const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

const s3BucketStep = testStep<S3Config>({
  name: 'Check S3 bucket exists',
  description: 'Ensure the configured S3 bucket exists and that we have the required permissions to access it.',
  configured: (c): c is Config & S3Config => isFilled(c, 'bucket_name'),
  async run(c, network) {
    const client = s3Client(c, network);
    try {
      const { HeadBucketCommand } = awsS3();
      await client.send(new HeadBucketCommand({ Bucket: c.bucket_name }), {
        abortSignal: AbortSignal.timeout(TIMEOUT_MS),
      });
      return passed;
    } catch (err) {
      if (err instanceof NetworkPolicyError) return failed(err.message);
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404)
        return failed(`Bucket '${c.bucket_name}' does not exist or we don't have permissions to use it`);
      if (status === 403 || status === 401) {
        return failed(
          `We couldn't access bucket '${c.bucket_name}'. Check the provided credentials, endpoint, and whether the ` +
            `necessary permissions to access the bucket have been granted`,
        );
      }
      return failed(`An unknown error occurred when trying to access bucket '${c.bucket_name}': ${reason(err)}`);
    } finally {
      client.destroy();
    }
  },
});

/** A short-lived connection to the destination database, through the policy's socket. */
async function withPostgres<T>(
  c: PostgresConfig,
  network: TenantNetwork,
  work: (sql: postgres.Sql) => Promise<T>,
): Promise<T> {
  const sql = await destinationClient(c, network, { connectTimeoutSeconds: TIMEOUT_MS / 1000, idleTimeoutSeconds: 1 });
  try {
    return await work(sql);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

const pgConfigured = (c: Config): c is Config & PostgresConfig =>
  ['host', 'database', 'user', 'password'].every((f) => isFilled(c, f));

const postgresConnectStep = testStep<PostgresConfig>({
  name: 'Verify connection to PostgreSQL',
  description: 'Ensure we can connect and sign in to the configured PostgreSQL database.',
  configured: pgConfigured,
  async run(c, network) {
    try {
      await withPostgres(c, network, (sql) => sql`select 1`);
      return passed;
    } catch (err) {
      return failed(`We couldn't connect to PostgreSQL at '${c.host}:${c.port ?? 5432}': ${reason(err)}`);
    }
  },
});

const postgresTableStep = testStep<PostgresConfig>({
  name: 'Verify schema and table permissions',
  description:
    'Ensure the configured schema exists and that the user can create the table in it, or insert into the table if ' +
    'it exists.',
  configured: pgConfigured,
  async run(c, network) {
    const schema: string = c.schema || 'public';
    const table: string = c.table_name || 'events';
    try {
      return await withPostgres(c, network, async (sql) => {
        const [s] = await sql<{ can_create: boolean; can_use: boolean }[]>`
          select has_schema_privilege(oid, 'CREATE') as can_create, has_schema_privilege(oid, 'USAGE') as can_use
          from pg_namespace where nspname = ${schema}`;
        if (!s) {
          // The export creates a missing schema, which needs CREATE on the database.
          const [d] = await sql<{ ok: boolean }[]>`select has_database_privilege(current_database(), 'CREATE') as ok`;
          return d?.ok ? passed : failed(`Schema '${schema}' does not exist and the user may not create it.`);
        }
        const [t] = await sql<{ ok: boolean }[]>`
          select has_table_privilege(c.oid, 'INSERT') and has_table_privilege(c.oid, 'UPDATE') as ok
          from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = ${schema} and c.relname = ${table} and c.relkind in ('r', 'p')`;
        if (t)
          return t.ok && s.can_use
            ? passed
            : failed(`The user may not insert into and update table '${schema}.${table}'.`);
        return s.can_create
          ? passed
          : failed(`Table '${schema}.${table}' does not exist and the user may not create it in schema '${schema}'.`);
      });
    } catch (err) {
      return failed(`We couldn't check schema '${schema}': ${reason(err)}`);
    }
  },
});

async function postBatch(c: Pick<HttpConfig, 'url'> & Partial<HttpConfig>, network: TenantNetwork): Promise<Response> {
  return guardedFetch(network.policy, c.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: c.token, historical_migration: true, batch: [] }),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
}

const httpReachStep = testStep<Pick<HttpConfig, 'url'>>({
  name: 'Verify the URL answers',
  description: 'Ensure the configured URL can be reached and answers HTTP requests.',
  configured: (c): c is Config & Pick<HttpConfig, 'url'> => isFilled(c, 'url'),
  async run(c, network) {
    try {
      const res = await postBatch(c, network);
      await res.arrayBuffer().catch(() => undefined);
      return res.status >= 500 ? failed(`The URL answered ${res.status}.`) : passed;
    } catch (err) {
      if (err instanceof NetworkPolicyError) return failed(err.message);
      return failed(`We couldn't reach ${new URL(c.url).origin}: ${reason(err)}`);
    }
  },
});

const httpTokenStep = testStep<HttpConfig>({
  name: 'Verify the token is accepted',
  description: 'Ensure the destination accepts a batch sent with the configured token (the batch sent is empty).',
  configured: (c): c is Config & HttpConfig => isFilled(c, 'url') && isFilled(c, 'token'),
  async run(c, network) {
    try {
      const res = await postBatch(c, network);
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return passed;
      if (res.status === 401 || res.status === 403) return failed(`The destination refused the token (${res.status}).`);
      return failed(`The destination answered ${res.status} to a batch.`);
    } catch (err) {
      if (err instanceof NetworkPolicyError) return failed(err.message);
      return failed(`We couldn't reach ${new URL(c.url).origin}: ${reason(err)}`);
    }
  },
});

const TESTS: Partial<Record<DestinationType, TestStep[]>> = {
  S3: [s3BucketStep],
  Postgres: [postgresConnectStep, postgresTableStep],
  HTTP: [httpReachStep, httpTokenStep],
};

const describe = (s: TestStep, result: StepResult | null): StepJson => ({
  name: s.name,
  description: s.description,
  result,
});

/** The steps of a destination type's test, not run; undefined for a type without one. */
export function destinationTest(type: string): { steps: StepJson[] } | undefined {
  const steps = TESTS[type as DestinationType];
  return steps && { steps: steps.map((s) => describe(s, null)) };
}

export function stepCount(type: string): number {
  return TESTS[type as DestinationType]?.length ?? 0;
}

/** Runs step `index` with a config whose secrets are in clear; the caller checked the index. */
export async function runTestStep(
  type: string,
  index: number,
  config: Config,
  network: TenantNetwork,
): Promise<StepJson> {
  const step = TESTS[type as DestinationType]![index]!;
  const result = step.attempt(config, network);
  if (!result) return describe(step, failed("The test step cannot run as it's not configured."));
  try {
    return describe(step, await result);
  } catch (err) {
    return describe(step, failed(`The test step failed with an unknown error: ${reason(err)}.`));
  }
}
