// tap's `before` script: migrate one template database per backend, once for the whole run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import postgres from 'postgres';
import { openDatabase } from '../../src/db/client.js';
import { PG_TEMPLATE_DB, PGLITE_TEMPLATE, withDatabase } from './db.js';

const base = process.env.DATABASE_URL;
if (base) {
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${PG_TEMPLATE_DB} with (force)`);
  await admin.unsafe(`create database ${PG_TEMPLATE_DB}`);
  const template = await openDatabase({ url: withDatabase(base, PG_TEMPLATE_DB), poolSize: 1 });
  await template.close();
  await admin.end();
} else {
  const pg = new PGlite();
  await migrate(drizzle({ client: pg }), { migrationsFolder: './drizzle' });
  const dump = await pg.dumpDataDir('gzip');
  mkdirSync(dirname(PGLITE_TEMPLATE), { recursive: true });
  writeFileSync(PGLITE_TEMPLATE, Buffer.from(await dump.arrayBuffer()));
  await pg.close();
}
