// Shared by the tests of PostHog's current batch export interface (batch_export_compat, batch_export_test_steps,
// batch_export_sessions): one app with its export worker, two tenants, and an export and backfill maker.
import t from 'tap';
import { buildTestApp } from './app.js';
import { makeTenant } from './factories.js';
import { startWorker, waitFor } from './batch-exports.js';

export const ctx = await buildTestApp(t);
export const { call, db } = ctx;
await startWorker(ctx);

export const HOUR = 3_600_000;
export const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR);
export const at = (h: number) => new Date(base.getTime() + h * HOUR);

export const a = await makeTenant(db);
export const b = await makeTenant(db);
export const PA = { project_id: a.project.id };
export const NOOP = { type: 'NoOp', config: {} };

export async function makeExport(body: Record<string, unknown>, tenant = a) {
  const res = await call('projects_batch_exports_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { name: 'export', destination: NOOP, interval: 'hour', paused: true, ...body },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body;
}

/** Backfills hours [0, hours) and waits for it; the runs, oldest first. */
export async function backfill(exp: { id: string }, hours: number) {
  const P = { ...PA, batch_export_id: exp.id };
  const made = await call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: P,
    body: { start_at: at(0).toISOString(), end_at: at(hours).toISOString() },
  });
  if (made.status !== 201) throw new Error(JSON.stringify(made.body));
  await waitFor('the backfill to finish', async () => {
    const r = await call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...P, id: made.body.backfill_id },
    });
    return r.body.status !== 'Running' && r.body.status !== 'Starting' && r.body;
  });
  const runs = await call('projects_batch_exports_runs_list', {
    key: a.key,
    params: P,
    query: { ordering: 'data_interval_start', start: '-1d' },
  });
  return { made: made.body, runs: runs.body.results as any[] };
}
