import t from 'tap';
import { eq } from 'drizzle-orm';
import { batch_exports } from '../../src/db/schema/index.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { insertEvents } from '../helpers/event-rows.js';
import { call, db, body } from '../helpers/batch-exports-app.js';

t.test('pause and unpause are idempotent', async (t) => {
  const a = await makeTenant(db);
  const created = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: body(),
  });
  const params = { project_id: a.project.id, id: created.body.id };
  const paused = await call('projects_batch_exports_pause_create', { key: a.key, params });
  t.same([paused.status, paused.body], [200, { paused: true }]);
  const after = (await call('projects_batch_exports_retrieve', { key: a.key, params })).body;
  t.equal(after.paused, true);
  t.ok(after.last_paused_at, 'last_paused_at is set');
  await new Promise((r) => setTimeout(r, 20));
  t.same((await call('projects_batch_exports_pause_create', { key: a.key, params })).body, { paused: true });
  const again = (await call('projects_batch_exports_retrieve', { key: a.key, params })).body;
  t.equal(again.last_updated_at, after.last_updated_at, 'a second pause changes nothing');
  t.equal(again.last_paused_at, after.last_paused_at);
  t.same((await call('projects_batch_exports_unpause_create', { key: a.key, params })).body, { paused: false });
  const unpaused = (await call('projects_batch_exports_retrieve', { key: a.key, params })).body;
  t.equal(unpaused.paused, false);
  await new Promise((r) => setTimeout(r, 20));
  t.same((await call('projects_batch_exports_unpause_create', { key: a.key, params, body: { backfill: true } })).body, {
    paused: false,
  });
  t.equal(
    (await call('projects_batch_exports_retrieve', { key: a.key, params })).body.last_updated_at,
    unpaused.last_updated_at,
  );
  const none = await call('projects_batch_exports_backfills_list', {
    key: a.key,
    params: { project_id: a.project.id, batch_export_id: created.body.id },
  });
  t.same(none.body.results, [], 'unpausing a running export backfills nothing');

  t.test('unpause with backfill covers the paused gap', async (t) => {
    const pausedAt = new Date(Date.now() - 3 * 3_600_000);
    await db
      .update(batch_exports)
      .set({ paused: true, last_paused_at: pausedAt })
      .where(eq(batch_exports.id, created.body.id));
    await call('projects_batch_exports_unpause_create', { key: a.key, params, body: { backfill: true } });
    const list = await call('projects_batch_exports_backfills_list', {
      key: a.key,
      params: { project_id: a.project.id, batch_export_id: created.body.id },
    });
    t.equal(list.body.results.length, 1);
    const hour = 3_600_000;
    t.equal(list.body.results[0].start_at, pausedAt.toISOString());
    t.equal(list.body.results[0].end_at, new Date(Math.floor(Date.now() / hour) * hour).toISOString());
    t.equal(list.body.results[0].progress.total_runs, 3, 'one run per hour of the gap');
  });

  t.test('errors', async (t) => {
    const b = await makeTenant(db);
    t.equal(
      (
        await call('batch_exports_pause_create', {
          key: b.key,
          params: { organization_id: b.organization.id, id: created.body.id },
        })
      ).status,
      404,
    );
    const reader = await makeKey(db, a.user, ['batch_export:read']);
    t.equal((await call('projects_batch_exports_pause_create', { key: reader, params })).status, 403);
    t.equal((await call('projects_batch_exports_unpause_create', { params })).status, 401);
    const typed = await call('projects_batch_exports_unpause_create', {
      key: a.key,
      params,
      body: { backfill: 'true' },
    });
    t.match(typed.body, { attr: 'backfill' });
  });
});

t.test('backfill validation', async (t) => {
  const a = await makeTenant(db);
  const created = await call('batch_exports_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: body({ interval: 'hour' }),
  });
  const params = { organization_id: a.organization.id, id: created.body.id };
  const noData = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-02T00:00:00Z' },
  });
  t.same(noData.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'There is no data to backfill for this model.',
    attr: null,
  });
  await insertEvents(db, a.project.id, [
    { timestamp: new Date('2024-03-01T10:20:00Z') },
    { timestamp: new Date('2024-03-01T12:10:00Z') },
  ]);
  const cases: [Record<string, unknown>, string][] = [
    [{ start_at: '2024-03-01T10:00:00', end_at: '2024-03-01T12:00:00Z' }, 'Input 2024-03-01T10:00:00 is naive.'],
    [{ start_at: 'soon', end_at: '2024-03-01T12:00:00Z' }, 'Input soon is not a valid ISO formatted datetime.'],
    [
      { start_at: '2024-03-01T12:00:00Z', end_at: '2024-03-01T11:00:00Z' },
      "The initial backfill datetime 'start_at' happens after 'end_at'",
    ],
    [
      { start_at: '2024-02-01T00:00:00Z', end_at: '2024-02-02T00:00:00Z' },
      'The provided backfill date range contains no data. The earliest possible backfill start date is 2024-03-01 ' +
        '10:00:00',
    ],
  ];
  for (const [payload, detail] of cases) {
    const res = await call('batch_exports_backfill_create', { key: a.key, params, body: payload });
    t.same([res.status, res.body.detail, res.body.attr], [400, detail, null]);
  }
  const future = new Date(Date.now() + 3 * 3_600_000).toISOString();
  const tooLate = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: '2024-03-01T10:00:00Z', end_at: future },
  });
  t.equal(tooLate.body.detail, `The provided 'end_at' (${future}) is in the future`);

  const ok = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { start_at: '2024-02-01T00:00:00+02:00', end_at: '2024-03-01T12:30:00Z' },
  });
  t.equal(ok.status, 200);
  t.match(ok.body, { backfill_id: /^[0-9a-f-]{36}$/ });
  const backfill = await call('batch_exports_backfills_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: created.body.id, id: ok.body.backfill_id },
  });
  t.match(backfill.body, {
    status: 'Running',
    start_at: '2024-01-31T22:00:00.000Z',
    adjusted_start_at: '2024-03-01T10:00:00.000Z',
    end_at: '2024-03-01T12:30:00.000Z',
    progress: { total_runs: 3, finished_runs: 0, progress: 0 },
    team: a.project.id,
    batch_export: created.body.id,
  });
  const runs = await call('batch_exports_runs_list', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: created.body.id },
    query: { ordering: 'data_interval_start', start: '2024-01-01T00:00:00Z' },
  });
  t.same(
    runs.body.results.map((r: { data_interval_start: string; data_interval_end: string; status: string }) => [
      r.data_interval_start,
      r.data_interval_end,
      r.status,
    ]),
    [
      ['2024-03-01T10:00:00.000Z', '2024-03-01T11:00:00.000Z', 'Starting'],
      ['2024-03-01T11:00:00.000Z', '2024-03-01T12:00:00.000Z', 'Starting'],
      ['2024-03-01T12:00:00.000Z', '2024-03-01T13:00:00.000Z', 'Starting'],
    ],
    'one run per hour, aligned to the grid',
  );
  const whole = await call('batch_exports_backfill_create', {
    key: a.key,
    params,
    body: { end_at: '2024-03-01T11:00:00Z' },
  });
  const single = await call('batch_exports_backfills_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: created.body.id, id: whole.body.backfill_id },
  });
  t.match(
    single.body,
    { start_at: null, progress: { total_runs: 1 } },
    'no start_at: everything before end_at in one run',
  );
  t.equal(
    (
      await call('batch_exports_backfill_create', {
        key: a.key,
        params: { ...params, id: '00000000-0000-0000-0000-000000000000' },
        body: {},
      })
    ).status,
    404,
  );
});
