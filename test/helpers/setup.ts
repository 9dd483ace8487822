// tap's `before` script: the run's database server and its migrated template database. Without
// DATABASE_URL it starts the run's embedded cluster (a fresh one: a cluster left by a crashed run is
// stopped and thrown away), left running for the test files and stopped by teardown.ts.
import { rmSync } from 'node:fs';
import { openDatabase } from '../../src/db/client.js';
import { startCluster, stopCluster } from '../../src/db/embedded.js';
import { adminClient, PG_TEMPLATE_DB, TEST_CLUSTER_DIR, testServerUrl, withDatabase } from './db.js';

if (!process.env.DATABASE_URL) {
  await stopCluster(TEST_CLUSTER_DIR);
  rmSync(TEST_CLUSTER_DIR, { recursive: true, force: true });
  // Test files run in parallel, each with its pools, job engine and server processes.
  await startCluster(TEST_CLUSTER_DIR, { maxConnections: 400, fsync: false });
}
const base = testServerUrl();
const admin = adminClient(base);
const [server] = await admin<{ server_version: string }[]>`show server_version`;
// scripts/test.sh reports the version in its closing line.
process.stderr.write(`test server: PostgreSQL ${server!.server_version.split(' ')[0]}\n`);
// The Query API roles of test databases that a crashed run left behind (a live database keeps its own).
for (const { rolname } of await admin<{ rolname: string }[]>`select rolname from pg_roles r
    where rolname ~ '^t_[0-9a-f]{12}_query$'
      and not exists (select 1 from pg_database d where d.datname || '_query' = r.rolname)`) {
  await admin.unsafe(`drop role if exists ${rolname}`).catch(() => {});
}
await admin.unsafe(`drop database if exists ${PG_TEMPLATE_DB} with (force)`);
await admin.unsafe(`create database ${PG_TEMPLATE_DB}`);
const template = await openDatabase({ url: withDatabase(base, PG_TEMPLATE_DB), poolSize: 1 });
await template.close();
await admin.end();
