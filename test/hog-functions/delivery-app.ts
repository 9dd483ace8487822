import type { Test } from 'tap';
import { createDeliveryWorker } from '../../src/hog-functions/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

/** The app with its delivery worker running (retries a second apart), and two tenants: `a` and a stranger `b`. */
export async function deliveryApp(t: Test) {
  const ctx = await buildTestApp(t, { hogRetryDelaySeconds: 1 });
  const worker = createDeliveryWorker(ctx.db, ctx.app.jobs, ctx.app.config, (m, e) => console.error(m, e));
  await worker.start();
  ctx.beforeClose(() => worker.stop());
  const a = await makeTenant(ctx.db);
  const b = await makeTenant(ctx.db);
  /** Events captured through `/batch/` (distinct id `u1` unless an event names one). */
  const capture = async (token: string, events: { event: string; [field: string]: unknown }[]) => {
    const batch = events.map((e) => ({ distinct_id: 'u1', properties: {}, ...e }));
    const res = await ctx.inject({ method: 'POST', url: '/batch/', payload: { api_key: token, batch } });
    if (res.statusCode !== 200) throw new Error(`capture answered ${res.statusCode}: ${res.body}`);
  };
  return { ctx, a, b, P: { project_id: a.project.id }, capture };
}
