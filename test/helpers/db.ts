import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import postgres from 'postgres';
import { openDatabase, type Database } from '../../src/db/client.js';

export const PGLITE_TEMPLATE = resolve('.tap/pglite-template.tar.gz');
// One template per checkout, so suites of two checkouts can share a PostgreSQL server.
export const PG_TEMPLATE_DB = `api_test_template_${createHash('sha1').update(process.cwd()).digest('hex').slice(0, 8)}`;

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A fresh, migrated database for one test file: a copy of the template database on PostgreSQL
 * when DATABASE_URL is set, else an in-memory PGlite loaded from the template dump.
 */
export async function openTestDatabase(): Promise<{ database: Database; url?: string; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) {
    const database = await openDatabase({ dataDir: 'memory://', template: PGLITE_TEMPLATE });
    return { database, drop: async () => {} };
  }
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${PG_TEMPLATE_DB}`);
  const url = withDatabase(base, name);
  const database = await openDatabase({ url, poolSize: 5 });
  return {
    database,
    url,
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}
