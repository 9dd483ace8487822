import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { startWorker, waitFor } from '../helpers/batch-exports.js';
import { floorToGrid } from '../../src/batch-exports/intervals.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const { worker } = await startWorker(ctx, { start: false });

const HOUR = 3_600_000;
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 6 * HOUR);
const at = (h: number) => new Date(base.getTime() + h * HOUR);

const a = await makeTenant(db);
const other = await makeTenant(db);
const exp = await call('projects_batch_exports_create', {
  key: a.key,
  params: { project_id: a.project.id },
  // Paused, so the minute tick never adds a scheduled run to what the assertions count; backfills run all the same.
  body: { name: 'noop', destination: { type: 'NoOp', config: {} }, interval: 'hour', paused: true },
});
const P = { project_id: a.project.id, batch_export_id: exp.body.id };
// Hour 0: 5 events, hour 1: none, hour 2: 7; plus events outside the range and in another project.
await insertEvents(db, a.project.id, [
  ...spread(5, at(0), at(1)),
  ...spread(7, at(2), at(3)),
  ...spread(3, at(4), at(5)),
]);
await insertEvents(db, other.project.id, spread(4, at(0), at(3)));

t.test('a backfill creates one run per interval and the worker exports each', async (t) => {
  const created = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: at(0).toISOString(), end_at: at(3).toISOString() },
  });
  t.equal(created.status, 201);
  await worker.start();
  const done = await waitFor('the backfill to complete', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: created.body.backfill_id },
    });
    return b.body.status === 'Completed' && b.body;
  });
  t.match(done, {
    progress: { total_runs: 3, finished_runs: 3, progress: 1 },
    total_records_count: 12,
    finished_at: /Z$/,
  });
  const runs = await call('projects_batch_exports_runs_list', {
    key: a.key,
    params: P,
    query: { ordering: 'data_interval_start', start: '-1d' },
  });
  t.same(
    runs.body.results.map((r: any) => [
      r.data_interval_start,
      r.status,
      r.records_total_count,
      r.records_completed,
      r.backfill,
    ]),
    [
      [at(0).toISOString(), 'Completed', 5, 5, created.body.backfill_id],
      [at(1).toISOString(), 'Completed', 0, 0, created.body.backfill_id],
      [at(2).toISOString(), 'Completed', 7, 7, created.body.backfill_id],
    ],
  );
  t.ok(runs.body.results[0].bytes_exported > 0, 'bytes are counted');
  t.ok(runs.body.results.every((r: any) => r.finished_at && r.latest_error === null));
  const logs = await call('projects_batch_exports_logs_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: exp.body.id },
    query: { instance_id: runs.body.results[2].id },
  });
  t.same(
    logs.body.results.map((l: any) => [l.level, l.message.replace(/ \(\d+ bytes\)/, '')]),
    [
      ['INFO', 'Batch export run finished: 7 records exported'],
      ['INFO', `Batch export run started: events from ${at(2).toISOString()} to ${at(3).toISOString()}`],
    ],
  );
  const retrieved = await call('projects_batch_exports_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: exp.body.id },
  });
  t.equal(retrieved.body.latest_runs.length, 3, 'latest_runs shows the runs');
});

t.test('runs_list pages with a cursor', async (t) => {
  const first = await call('projects_batch_exports_runs_list', { key: a.key, params: P, query: { limit: 2 } });
  t.equal(first.body.results.length, 2);
  t.equal(first.body.previous, null);
  t.notOk('count' in first.body);
  const cursor = new URL(first.body.next).searchParams.get('cursor')!;
  const second = await call('projects_batch_exports_runs_list', { key: a.key, params: P, query: { limit: 2, cursor } });
  t.equal(second.body.results.length, 1);
  t.equal(second.body.next, null);
  const seen = [...first.body.results, ...second.body.results].map((r: any) => r.id);
  t.equal(new Set(seen).size, 3, 'every run once');
  const back = await call('projects_batch_exports_runs_list', {
    key: a.key,
    params: P,
    query: { limit: 2, cursor: new URL(second.body.previous).searchParams.get('cursor')! },
  });
  t.same(
    back.body.results.map((r: any) => r.id),
    seen.slice(0, 2),
    'previous returns the first page',
  );
  // PostHog's ordering filter ignores terms it does not know: any string is taken, never a 400.
  const all = async (ordering: string) =>
    (await call('projects_batch_exports_runs_list', { key: a.key, params: P, query: { ordering } })).body.results.map(
      (r: any) => r.id,
    );
  const newest = await all('-created_at');
  t.same(await all('bogus'), newest, 'an unknown field falls back to -created_at');
  t.same(await all('created_at'), [...newest].reverse(), 'a known one orders the page');
  t.same(await all('bogus, created_at'), [...newest].reverse(), 'the first known term of several');
  const bad = await call('projects_batch_exports_runs_list', { key: a.key, params: P, query: { cursor: 'garbage' } });
  t.match(bad, { status: 404, body: { detail: 'Invalid cursor' } });
  const old = await call('projects_batch_exports_runs_list', { key: a.key, params: P, query: { before: '-1d' } });
  t.same(old.body.results, [], 'created_at window');
  const badDate = await call('projects_batch_exports_runs_list', {
    key: a.key,
    params: P,
    query: { after: 'whenever' },
  });
  t.match(badDate, { status: 400, body: { attr: 'after' } });
  const orgScope = await call('batch_exports_runs_list', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: exp.body.id },
  });
  t.equal(orgScope.body.results.length, 3);
  t.equal(
    (
      await call('batch_exports_runs_list', {
        key: other.key,
        params: { organization_id: other.organization.id, batch_export_id: exp.body.id },
      })
    ).status,
    404,
  );
  t.equal((await call('projects_batch_exports_runs_list', { params: P })).status, 401);
  const noScope = await makeKey(db, a.user, ['dashboard:read']);
  t.equal((await call('projects_batch_exports_runs_list', { key: noScope, params: P })).status, 403);
});

t.test('retry and cancel', async (t) => {
  const runs = (await call('projects_batch_exports_runs_list', { key: a.key, params: P })).body.results;
  const run = runs.find((r) => r.records_completed === 7)!;
  const got = await call('projects_batch_exports_runs_retrieve', { key: a.key, params: { ...P, id: run.id } });
  t.same(got.body, run);
  t.equal(
    (
      await call('projects_batch_exports_runs_retrieve', {
        key: a.key,
        params: { ...P, id: '00000000-0000-0000-0000-000000000000' },
      })
    ).status,
    404,
  );
  const refused = await call('projects_batch_exports_runs_cancel_create', { key: a.key, params: { ...P, id: run.id } });
  t.same(refused.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: "Cannot cancel a run that is in 'Completed' status",
    attr: null,
  });

  const retried = await call('projects_batch_exports_runs_retry_create', { key: a.key, params: { ...P, id: run.id } });
  t.match(retried.body, { backfill_id: /^[0-9a-f-]{36}$/ });
  const again = await waitFor('the retry to complete', async () => {
    const b = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: retried.body.backfill_id },
    });
    return b.body.status === 'Completed' && b.body;
  });
  t.match(again, { start_at: run.data_interval_start, end_at: run.data_interval_end, total_records_count: 7 });

  // A weekly export's current week has not ended, so a backfill's run for it waits, Starting, until it has.
  const weekly = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 'weekly', destination: { type: 'NoOp', config: {} }, interval: 'week', paused: true },
  });
  const W = { project_id: a.project.id, batch_export_id: weekly.body.id };
  const monday = floorToGrid(new Date(), 'week');
  const pending = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: W,
    body: { start_at: monday.toISOString(), end_at: new Date(Date.now() + HOUR).toISOString() },
  });
  t.equal(pending.status, 201);
  const [waiting] = (
    await call('projects_batch_exports_runs_list', {
      key: a.key,
      params: W,
      query: { before: new Date(Date.now() + HOUR).toISOString() },
    })
  ).body.results;
  t.match(waiting, {
    status: 'Starting',
    data_interval_start: monday.toISOString(),
    backfill: pending.body.backfill_id,
  });
  const cancelled = await call('projects_batch_exports_runs_cancel_create', {
    key: a.key,
    params: { ...W, id: waiting.id },
  });
  t.same(cancelled.body, { cancelled: true });
  t.match((await call('projects_batch_exports_runs_retrieve', { key: a.key, params: { ...W, id: waiting.id } })).body, {
    status: 'Cancelled',
    finished_at: /Z$/,
  });
  const settled = await call('projects_batch_exports_backfills_retrieve', {
    key: a.key,
    params: { ...W, id: pending.body.backfill_id },
  });
  t.equal(settled.body.status, 'Completed', 'a backfill whose runs all finished or were cancelled is complete');
  const reader = await makeKey(db, a.user, ['batch_export:read']);
  t.equal(
    (await call('projects_batch_exports_runs_retry_create', { key: reader, params: { ...P, id: run.id } })).status,
    403,
  );
  t.equal(
    (
      await call('batch_exports_runs_cancel_create', {
        key: other.key,
        params: { organization_id: other.organization.id, batch_export_id: exp.body.id, id: run.id },
      })
    ).status,
    404,
  );
});

t.test('backfills list and cancel', async (t) => {
  const started = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: {
      start_at: new Date(Date.now() - HOUR / 2).toISOString(),
      end_at: new Date(Date.now() + HOUR / 2).toISOString(),
    },
  });
  const ok = await call('projects_batch_exports_backfills_cancel_create', {
    key: a.key,
    params: { ...P, id: started.body.backfill_id },
  });
  t.same(ok.body, { cancelled: true });
  const after = await call('projects_batch_exports_backfills_retrieve', {
    key: a.key,
    params: { ...P, id: started.body.backfill_id },
  });
  t.match(after.body, { status: 'Cancelled', progress: null, finished_at: /Z$/ });
  const twice = await call('projects_batch_exports_backfills_cancel_create', {
    key: a.key,
    params: { ...P, id: started.body.backfill_id },
  });
  t.equal(twice.body.detail, "Cannot cancel a backfill that is in 'Cancelled' status");
  const list = await call('projects_batch_exports_backfills_list', { key: a.key, params: P, query: { limit: 2 } });
  t.equal(list.body.results[0].id, started.body.backfill_id, 'newest first');
  const unknown = await call('projects_batch_exports_backfills_list', {
    key: a.key,
    params: P,
    query: { limit: 2, ordering: 'nope' },
  });
  // The same backfills in the same order (a run of the cancelled one may still be settling its counts).
  const ids = (r: { body: { results: { id: string }[] } }) => r.body.results.map((b) => b.id);
  t.same(ids(unknown), ids(list), 'an unknown ordering is the default one');
  const ordered = async (ordering: string) =>
    (
      await call('projects_batch_exports_backfills_list', { key: a.key, params: P, query: { limit: 10, ordering } })
    ).body.results.map((b) => [b.id, b.start_at] as const);
  const byStart = await ordered('start_at');
  const starts = byStart.map(([, start]) => start!);
  t.equal(new Set(starts).size, 3, 'three backfills, each starting at its own time');
  t.same(starts, [...starts].sort(), 'a known field orders the page: start_at, earliest first');
  t.same(await ordered('-start_at'), [...byStart].reverse(), '-start_at, latest first');
  t.same(await ordered('nope,-start_at'), [...byStart].reverse(), 'unknown terms are skipped for a known one');
  t.ok(list.body.next);
  const rest = await call('projects_batch_exports_backfills_list', {
    key: a.key,
    params: P,
    query: { limit: 10, cursor: new URL(list.body.next).searchParams.get('cursor')! },
  });
  t.equal(list.body.results.length + rest.body.results.length, 3);
  const org = await call('batch_exports_backfills_list', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: exp.body.id },
  });
  t.equal(org.body.results.length, 3);
  t.equal(
    (await call('projects_batch_exports_backfills_retrieve', { key: a.key, params: { ...P, id: 'nope' } })).status,
    404,
  );
  const validation = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: 5 },
  });
  t.match(validation, { status: 400, body: { attr: 'start_at' } });
  t.equal(
    (
      await call('projects_batch_exports_backfills_create', {
        key: other.key,
        params: { project_id: other.project.id, batch_export_id: exp.body.id },
        body: {},
      })
    ).status,
    404,
  );
});
