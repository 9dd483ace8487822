// DATABASE_READ_URL: a real streaming replica of the suite's PostgreSQL server (pg_basebackup -R, started by
// this test). With replay paused on the replica, an event written afterwards is on the primary and not on
// the replica: the Query API, insight kinds and the events listing do not see it (they read the replica),
// asynchronous queries and writes do (they use the primary). Query statements on the replica still run
// under the restricted query role. Runs only with DATABASE_URL (the system PostgreSQL pass).
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/client.js';
import { caughtUpReader } from '../../src/db/replica.js';
import { rowsOf } from '../../src/db/queries/util.js';
import { streamReadOnly } from '../../src/query/queries.js';
import { statementTarget } from '../../src/query/run.js';
import { adminClient, createTestDatabase } from '../helpers/db.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { replicaUnavailable, startReplica } from '../helpers/pg-replica.js';

const primaryServer = process.env.DATABASE_URL;
const why = primaryServer
  ? await replicaUnavailable(primaryServer)
  : 'DATABASE_URL is not set: a replica of the embedded cluster is not made (the system PostgreSQL pass runs this)';
if (why) {
  t.pass('read replica', { skip: why });
} else {
  await replicaSuite(primaryServer!);
}

async function replicaSuite(server: string): Promise<void> {
  const replica = await startReplica(server);
  t.teardown(() => replica.stop());
  const { url, drop } = await createTestDatabase();
  const name = new URL(url).pathname.slice(1);
  const readUrl = replica.url(name);
  const database = await openDatabase({ url, readUrl, poolSize: 4 });
  const config = {
    ...loadConfig({ RATE_LIMITS: 'off', WORKER: '0', ENCRYPTION_KEY: randomBytes(32).toString('base64') }),
    databaseReadUrl: readUrl,
  };
  // The query role is made on the primary at start; the app waits for the replica to have it.
  const app = await buildApp({ config, database });
  const standby = adminClient(readUrl);
  t.teardown(async () => {
    await app.close();
    await database.close();
    await standby`select pg_wal_replay_resume()`.catch(() => {});
    await standby.end();
    await drop();
  });

  const db = database.db;
  const a = await makeTenant(db);
  const auth = { authorization: `Bearer ${a.key}` };
  const base = `/api/projects/${a.project.id}`;
  await insertEvents(db, a.project.id, [
    { event: 'signup', distinct_id: 'u1', timestamp: new Date(Date.now() - 60_000) },
    { event: 'signup', distinct_id: 'u2', timestamp: new Date(Date.now() - 50_000) },
  ]);
  const caughtUp = async (t: Test) =>
    t.ok((await caughtUpReader(db, database.read, 20_000)).replica, 'replica caught up');
  const hogqlCount = async () => {
    const res = await app.inject({
      method: 'POST',
      url: `${base}/query/`,
      headers: auth,
      payload: { query: { kind: 'HogQLQuery', query: "select count() from events where event = 'signup'" } },
    });
    return [res.statusCode, res.json().results?.[0]?.[0]];
  };
  const trendsTotal = async () => {
    const res = await app.inject({
      method: 'POST',
      url: `${base}/query/`,
      headers: auth,
      payload: {
        query: {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'signup', math: 'total' }],
          dateRange: { date_from: '-1d' },
          trendsFilter: { display: 'BoldNumber' },
        },
      },
    });
    return [res.statusCode, res.json().results?.[0]?.aggregated_value];
  };
  const listed = async () => {
    const res = await app.inject({ method: 'GET', url: `${base}/events/?event=signup`, headers: auth });
    return [res.statusCode, res.json().results?.length];
  };

  t.test('the replica is a hot standby, and query statements there run as the restricted role', async (t) => {
    await caughtUp(t);
    t.not(database.read, db, 'reads have a pool of their own');
    const target = statementTarget(app.queries, undefined);
    t.equal(target.db, database.read, 'synchronous query statements go to the replica');
    t.ok(target.limits?.role, 'with the query role');
    const seen: unknown[] = [];
    await streamReadOnly(target.db, sql`select json_build_array(current_user, pg_is_in_recovery())`, {
      timeoutMs: 5000,
      limits: target.limits,
      onRow: (json) => seen.push(JSON.parse(json.toString())) > 0,
    });
    t.same(seen, [[target.limits!.role, true]], 'current_user is the query role, on a server in recovery');
    const denied = await streamReadOnly(target.db, sql`select json_build_array(count(*)) from personal_api_keys`, {
      timeoutMs: 5000,
      limits: target.limits,
      onRow: () => true,
    }).then(
      () => 'read',
      (err: { code?: string }) => err.code,
    );
    t.equal(denied, '42501', 'the role may not read other tables on the replica either');
    t.same(await hogqlCount(), [200, 2]);
  });

  t.test('with replay paused, reads miss a new event that the primary and its own writes have', async (t) => {
    await caughtUp(t);
    await standby`select pg_wal_replay_pause()`;
    // Pausing takes effect between records: wait until the replica says it is paused.
    for (let i = 0; i < 100; i++) {
      const [s] = await standby<{ state: string }[]>`select pg_get_wal_replay_pause_state() as state`;
      if (s!.state === 'paused') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const capture = await app.inject({
      method: 'POST',
      url: '/batch/',
      payload: { api_key: a.project.api_token, batch: [{ event: 'signup', distinct_id: 'u3' }] },
    });
    t.equal(capture.statusCode, 200, 'ingestion writes to the primary');
    const [onPrimary] = rowsOf<{ n: number }>(
      await db.execute(
        sql`select count(*)::int as n from events where project_id = ${a.project.id} and event = 'signup'`,
      ),
    );
    t.equal(onPrimary!.n, 3, 'the primary has the new event');
    t.same(await hogqlCount(), [200, 2], 'the Query API answers from the replica');
    t.same(await trendsTotal(), [200, 2], 'so do the insight kinds');
    t.same(await listed(), [200, 2], 'and the events listing');
    const exportReader = await caughtUpReader(db, database.read, 300);
    t.same(
      [exportReader.db === db, exportReader.replica],
      [true, false],
      'an export run passes over a lagging replica',
    );

    const dashboard = await app.inject({
      method: 'POST',
      url: `${base}/dashboards/`,
      headers: auth,
      payload: { name: 'd' },
    });
    t.equal(dashboard.statusCode, 201, 'writes go to the primary while the replica is paused');
    const got = await app.inject({ method: 'GET', url: `${base}/dashboards/${dashboard.json().id}/`, headers: auth });
    t.equal(got.statusCode, 200, 'and read their own write at once');

    const started = await app.inject({
      method: 'POST',
      url: `${base}/query/`,
      headers: auth,
      payload: {
        refresh: 'force_async',
        query: { kind: 'HogQLQuery', query: "select count() from events where event = 'signup'" },
      },
    });
    t.equal(started.statusCode, 202);
    let status: { query_status: { complete: boolean; results?: { results: unknown[][] } } } | undefined;
    for (let i = 0; i < 200; i++) {
      const res = await app.inject({
        method: 'GET',
        url: `${base}/query/${started.json().query_status.id}/`,
        headers: auth,
      });
      status = res.json();
      if (status!.query_status.complete) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t.same(
      status?.query_status.results?.results,
      [[3]],
      'an asynchronous query runs on the primary (its status and cancel live there)',
    );

    await standby`select pg_wal_replay_resume()`;
    await caughtUp(t);
    t.same(await hogqlCount(), [200, 3], 'once replay resumes the replica answers with the new event');
    t.same(await listed(), [200, 3]);
    t.equal((await caughtUpReader(db, database.read, 5000)).db, database.read, 'and export runs read from it');
  });
}
