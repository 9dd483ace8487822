import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import postgres from 'postgres';
import { openDatabase, socketOptions, type Database } from '../../src/db/client.js';
import { clusterUrl } from '../../src/db/embedded.js';
import { queryRoleName } from '../../src/query/role-queries.js';

/**
 * The embedded cluster of a test run (started by setup.ts, stopped by teardown.ts), used when
 * DATABASE_URL is unset. Throw-away, so it runs with fsync off.
 */
export const TEST_CLUSTER_DIR = resolve('.tap/pg');
// One template per checkout, so suites of two checkouts can share a PostgreSQL server.
export const PG_TEMPLATE_DB = `api_test_template_${createHash('sha1').update(process.cwd()).digest('hex').slice(0, 8)}`;

/** The server the suite runs on: DATABASE_URL's, else the run's embedded cluster. */
export function testServerUrl(): string {
  return process.env.DATABASE_URL || clusterUrl(TEST_CLUSTER_DIR);
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A postgres.js client for a URL in libpq's form (a socket folder as `?host=`). */
export function adminClient(url: string, max = 1): postgres.Sql {
  const { url: plain, host } = socketOptions(url);
  return postgres(plain, { ...(host ? { host } : {}), max, onnotice: () => {} });
}

/** A fresh database on the test server, copied from the migrated template. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const base = testServerUrl();
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = adminClient(base);
  await admin.unsafe(`create database ${name} template ${PG_TEMPLATE_DB}`);
  return {
    url: withDatabase(base, name),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      // The Query API's role of the database (made by the app at start) belongs to the cluster.
      await admin.unsafe(`drop role if exists ${queryRoleName(name)}`);
      await admin.end();
    },
  };
}

/** A fresh, migrated database for one test file, on the embedded cluster or DATABASE_URL's server. */
export async function openTestDatabase(
  onStatement?: (text: string) => void,
): Promise<{ database: Database; url: string; drop(): Promise<void> }> {
  const { url, drop } = await createTestDatabase();
  const database = await openDatabase({ url, poolSize: 5, onStatement });
  return { database, url, drop };
}
