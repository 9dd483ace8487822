// A run whose worker tries to claim it while PostgreSQL is restarting: the claim is sent again once
// the server answers, and the run completes. Failing the job instead left it to the job engine, which
// could not record the failure either, so the run waited for the engine's next supervision pass (seen
// as a run still Starting 20 s after a restart in test/faults/export-restart.test.ts).
import { eq } from 'drizzle-orm';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { floorToGrid } from '../../src/batch-exports/intervals.js';
import { insertRuns, unscopedClaimRun } from '../../src/batch-exports/run-queries.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/client.js';
import { batch_export_runs } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { attemptRun } from '../helpers/batch-exports.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { findPgBin, startCluster } from '../helpers/pg-cluster.js';

const HOUR = 3_600_000;
const bin = findPgBin();

t.test(
  'a run claimed while the database restarts is claimed once it is back, and completes',
  { skip: bin ? false : 'no PostgreSQL binaries to start a private cluster' },
  async (t) => {
    const cluster = await startCluster(bin!);
    t.teardown(() => cluster.destroy());
    const database = await openDatabase({ url: cluster.url, poolSize: 4 });
    const app = await buildApp({ config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }), database });
    t.teardown(async () => {
      await app.close();
      await database.close();
    });
    const tenant = await makeTenant(database.db);
    const start = floorToGrid(new Date(Date.now() - 2 * HOUR), 'hour');
    const end = new Date(start.getTime() + HOUR);
    await insertEvents(database.db, tenant.project.id, spread(30, start, end));
    const created = await app.inject({
      method: 'POST',
      url: `/api/projects/${tenant.project.id}/batch_exports/`,
      headers: { authorization: `Bearer ${tenant.key}` },
      payload: { name: 'claim', interval: 'hour', paused: true, destination: { type: 'NoOp', config: {} } },
    });
    t.equal(created.statusCode, 201, created.body);
    const [run] = await insertRuns(database.db, { project_id: tenant.project.id }, created.json().id, [{ start, end }]);

    // Down when the worker claims the run; back 2 s later.
    cluster.stop();
    const back = new Promise<void>((resolve) =>
      setTimeout(() => {
        cluster.start();
        resolve();
      }, 2_000),
    );
    const outcome = await attemptRun(database.db, app.config, run!.id, { batchSize: 10, staleSeconds: 10 });
    await back;
    t.equal(outcome, 'completed');
    const [row] = await database.db.select().from(batch_export_runs).where(eq(batch_export_runs.id, run!.id));
    t.match(row, { status: 'Completed', records_completed: 30, attempts: 1 });
  },
);

t.test('a claim sent again by its holder gets the run back; another worker does not', async (t) => {
  const ctx = await buildTestApp(t);
  const tenant = await makeTenant(ctx.db);
  const created = await ctx.app.inject({
    method: 'POST',
    url: `/api/projects/${tenant.project.id}/batch_exports/`,
    headers: { authorization: `Bearer ${tenant.key}` },
    payload: { name: 'again', interval: 'hour', paused: true, destination: { type: 'NoOp', config: {} } },
  });
  const start = floorToGrid(new Date(Date.now() - 2 * HOUR), 'hour');
  const end = new Date(start.getTime() + HOUR);
  const [run] = await insertRuns(ctx.db, { project_id: tenant.project.id }, created.json().id, [{ start, end }]);
  t.match(await unscopedClaimRun(ctx.db, run!.id, 'first', 60), {
    status: 'Running',
    claimed_by: 'first',
    attempts: 1,
  });
  t.match(
    await unscopedClaimRun(ctx.db, run!.id, 'first', 60),
    { status: 'Running', claimed_by: 'first', attempts: 1 },
    'the holder, asking again, is answered with its claim, counted once',
  );
  t.equal(await unscopedClaimRun(ctx.db, run!.id, 'second', 60), undefined, 'another worker cannot take it');
});
