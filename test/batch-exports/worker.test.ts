// The runner as a deployment sees it: the schedule, several workers sharing runs, a worker stopped
// mid-run, a worker that died, and cancelling a run in flight.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { eq, sql } from 'drizzle-orm';
import t from 'tap';
import { floorToGrid } from '../../src/batch-exports/intervals.js';
import { TICK_QUEUE } from '../../src/batch-exports/engine.js';
import { batch_export_logs, batch_export_runs } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { captureServer, startWorker, waitFor } from '../helpers/batch-exports.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const first = await startWorker(ctx, { batchSize: 50 });
const inProcess = [first];

const HOUR = 3_600_000;
const MIN = 60_000;
const a = await makeTenant(db);
const lastHour = floorToGrid(new Date(Date.now() - HOUR), 'hour');
await insertEvents(db, a.project.id, spread(1500, lastHour, new Date(lastHour.getTime() + HOUR)));

async function createExport(body: Record<string, unknown>) {
  // Paused unless a test says otherwise, so the minute tick adds no scheduled run to what is counted.
  const res = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 'x', interval: 'hour', paused: true, ...body },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body;
}
const runsOf = (id: string) =>
  db
    .select()
    .from(batch_export_runs)
    .where(eq(batch_export_runs.batch_export_id, id))
    .orderBy(batch_export_runs.data_interval_end);
const runOf = async (id: string) => (await db.select().from(batch_export_runs).where(eq(batch_export_runs.id, id)))[0]!;

t.test('the schedule: one run per interval on the UTC grid, within start_at and end_at', async (t) => {
  const now = new Date();
  const hourly = await createExport({ destination: { type: 'NoOp', config: {} }, paused: false });
  await first.worker.tick(new Date(now.getTime() + 2 * HOUR + MIN));
  const runs = await runsOf(hourly.id);
  const h = floorToGrid(now, 'hour').getTime();
  t.same(
    runs.map((r) => [r.data_interval_start!.getTime(), r.data_interval_end.getTime(), r.status, r.backfill_id]),
    [
      [h, h + HOUR, 'Starting', null],
      [h + HOUR, h + 2 * HOUR, 'Starting', null],
    ],
    'the intervals that ended since creation',
  );
  await first.worker.tick(new Date(now.getTime() + 2 * HOUR + MIN));
  t.equal((await runsOf(hourly.id)).length, 2, 'ticking again adds nothing');
  const second = await startWorker(ctx, { start: false });
  await Promise.all([
    first.worker.tick(new Date(now.getTime() + 3 * HOUR + MIN)),
    second.worker.tick(new Date(now.getTime() + 3 * HOUR + MIN)),
  ]);
  t.equal((await runsOf(hourly.id)).length, 3, 'two workers ticking at once create the next run once');

  const start = new Date(h + 2 * HOUR);
  const windowed = await createExport({
    destination: { type: 'NoOp', config: {} },
    interval: 'every 5 minutes',
    paused: false,
    start_at: new Date(start.getTime() - 2 * MIN).toISOString(),
    end_at: new Date(start.getTime() + HOUR).toISOString(),
  });
  await first.worker.tick(new Date(now.getTime() + 5 * HOUR));
  const five = await runsOf(windowed.id);
  t.equal(five.length, 12, 'twelve 5-minute runs in the hour between start_at and end_at');
  t.equal(five[0]!.data_interval_start!.getTime(), start.getTime(), 'start_at moved up to the grid');
  t.ok(five.every((r) => r.data_interval_start!.getTime() % (5 * MIN) === 0));
  t.equal(five[11]!.data_interval_end.getTime(), start.getTime() + HOUR);

  const weekly = await createExport({ destination: { type: 'NoOp', config: {} }, interval: 'week', paused: false });
  await first.worker.tick(new Date(now.getTime() + 8 * 24 * HOUR));
  const [week] = await runsOf(weekly.id);
  t.equal(week!.data_interval_start!.getUTCDay(), 1, 'weeks start on Monday');
  t.equal(week!.data_interval_start!.getUTCHours(), 0);

  const paused = await createExport({ destination: { type: 'NoOp', config: {} }, paused: true });
  await first.worker.tick(new Date(now.getTime() + 2 * HOUR));
  t.equal((await runsOf(paused.id)).length, 0, 'a paused export gets no runs');
  const schedules = await (await first.engine.boss()).getSchedules(TICK_QUEUE);
  t.match(
    schedules,
    [{ name: TICK_QUEUE, cron: '* * * * *', timezone: 'UTC' }],
    'the minute tick is a cron schedule in the job engine',
  );
});

t.test('a worker stopped mid-run hands the run back, and another worker finishes it', async (t) => {
  const slow = await captureServer(t, async () => {
    await new Promise((r) => setTimeout(r, 150));
    return 200;
  });
  const exp = await createExport({ destination: { type: 'HTTP', config: { url: slow.url, token: 'phc_x' } } });
  const P = { project_id: a.project.id, batch_export_id: exp.id };
  const backfill = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: lastHour.toISOString(), end_at: new Date(lastHour.getTime() + HOUR).toISOString() },
  });
  const [run] = await runsOf(exp.id);
  await waitFor('the run to be under way', async () => slow.requests.length >= 3);
  await first.worker.stop();
  const handedBack = await runOf(run!.id);
  t.match(handedBack, { status: 'FailedRetryable', latest_error: /worker stopped/, claimed_by: null });
  t.ok(handedBack.records_completed! > 0 && handedBack.records_completed! < 1500, 'it was part-way through');
  const sentBefore = slow.requests.length;

  inProcess.push(await startWorker(ctx, { batchSize: 50 }));
  const done = await waitFor('another worker to finish it', async () => {
    const r = await runOf(run!.id);
    return r.status === 'Completed' && r;
  });
  t.match(done, { records_completed: 1500, records_total_count: 1500, attempts: 2 });
  t.ok(slow.requests.length > sentBefore);
  const received = new Set(slow.requests.flatMap((r) => r.body.batch.map((e: { uuid: string }) => e.uuid)));
  t.equal(received.size, 1500, 'every event arrived (the receiver deduplicates resent ones by uuid)');
  const settled = await waitFor('the backfill to settle', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: backfill.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
  t.equal(settled.status, 'Completed');
});

/** A NoOp export every 5 minutes, backfilled over the last hour; its runs once the backfill completes. */
async function backfillLastHour() {
  const exp = await createExport({ destination: { type: 'NoOp', config: {} }, interval: 'every 5 minutes' });
  const P = { project_id: a.project.id, batch_export_id: exp.id };
  const backfill = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: lastHour.toISOString(), end_at: new Date(lastHour.getTime() + HOUR).toISOString() },
  });
  await waitFor('the backfill', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: backfill.body.backfill_id },
    });
    return b.body.status === 'Completed';
  });
  return { exp, runs: await runsOf(exp.id) };
}

t.test('two workers share a backfill without running a run twice', async (t) => {
  inProcess.push(await startWorker(ctx, { batchSize: 200 }));
  const { exp, runs } = await backfillLastHour();
  t.equal(runs.length, 12);
  t.ok(
    runs.every((r) => r.status === 'Completed' && r.attempts === 1),
    'each run was claimed once',
  );
  t.equal(
    runs.reduce((n, r) => n + r.records_completed!, 0),
    1500,
    'the counts add up to the hour',
  );
  const starts = await db
    .select({ run: batch_export_logs.instance_id, n: sql<number>`count(*)::int` })
    .from(batch_export_logs)
    .where(
      sql`${batch_export_logs.batch_export_id} = ${exp.id}
        and ${batch_export_logs.message} like 'Batch export run started%'`,
    )
    .groupBy(batch_export_logs.instance_id);
  t.equal(starts.length, 12);
  t.ok(
    starts.every((s) => s.n === 1),
    'each run started once',
  );
});

t.test('cancelling a running run stops the worker at its next batch', async (t) => {
  const slow = await captureServer(t, async () => {
    await new Promise((r) => setTimeout(r, 200));
    return 200;
  });
  const exp = await createExport({ destination: { type: 'HTTP', config: { url: slow.url, token: 'phc_x' } } });
  const P = { project_id: a.project.id, batch_export_id: exp.id };
  await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: lastHour.toISOString(), end_at: new Date(lastHour.getTime() + HOUR).toISOString() },
  });
  await waitFor('the run to be under way', async () => slow.requests.length >= 2);
  const [run] = await runsOf(exp.id);
  const res = await call('projects_batch_exports_runs_cancel_create', { key: a.key, params: { ...P, id: run!.id } });
  t.same(res.body, { cancelled: true });
  await waitFor('the worker to notice', async () => {
    const logs = await db.select().from(batch_export_logs).where(eq(batch_export_logs.instance_id, run!.id));
    return logs.some((l) => l.message === 'Batch export run cancelled');
  });
  const sent = slow.requests.length;
  await new Promise((r) => setTimeout(r, 700));
  t.equal(slow.requests.length, sent, 'nothing more is sent');
  t.ok(sent < 30, 'it stopped before the end');
  t.match(await runOf(run!.id), { status: 'Cancelled', finished_at: Date });
});

t.test('a run held by a worker that died is taken over', async (t) => {
  const exp = await createExport({ destination: { type: 'NoOp', config: {} } });
  const P = { project_id: a.project.id, batch_export_id: exp.id };
  const [run] = await db
    .insert(batch_export_runs)
    .values({
      batch_export_id: exp.id,
      status: 'Running',
      data_interval_start: lastHour,
      data_interval_end: new Date(lastHour.getTime() + HOUR),
      claimed_by: 'a-worker-that-died',
      heartbeat_at: new Date(Date.now() - 5 * MIN),
      attempts: 1,
    })
    .returning();
  const ticker = await startWorker(ctx, { start: false });
  await ticker.worker.tick();
  const done = await waitFor('the takeover', async () => {
    const r = await runOf(run!.id);
    return r.status === 'Completed' && r;
  });
  t.match(done, { records_completed: 1500, attempts: 2, claimed_by: null });
  const listed = await call('projects_batch_exports_runs_retrieve', { key: a.key, params: { ...P, id: run!.id } });
  t.equal(listed.body.status, 'Completed');
});

t.test('worker processes started with `npm run worker` share the runs on PostgreSQL', async (t) => {
  if (!ctx.url) {
    t.plan(0, 'separate worker processes need PostgreSQL (the embedded database belongs to one process)');
    return;
  }
  // Only the child processes work from here on.
  for (const w of inProcess) await w.worker.stop();
  const children = [0, 1].map(() =>
    spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
      env: { ...process.env, DATABASE_URL: ctx.url, BATCH_EXPORT_BATCH_SIZE: '100', NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  t.teardown(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });
  const outputs = children.map((child) => {
    const out = { text: '' };
    child.stdout!.on('data', (d: Buffer) => (out.text += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out.text += d.toString()));
    return out;
  });
  await waitFor(
    'both workers to start',
    async () => outputs.every((o) => o.text.includes('batch export worker started')),
    60_000,
  );

  const { runs } = await backfillLastHour();
  t.equal(runs.length, 12);
  t.ok(
    runs.every((r) => r.status === 'Completed' && r.attempts === 1),
    'no run was exported twice',
  );
  t.equal(
    runs.reduce((n, r) => n + r.records_completed!, 0),
    1500,
  );
  for (const child of children) child.kill('SIGINT');
  const codes = await Promise.all(
    children.map((child) => (child.exitCode !== null ? [child.exitCode] : once(child, 'exit'))),
  );
  t.same(
    codes.map((c) => c[0]),
    [0, 0],
    'SIGINT stops them cleanly',
  );
  t.ok(outputs.every((o) => o.text.includes('batch export worker stopped')));
});
