import type { Test } from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

/** A tenant whose events go through capture's `/batch/`, and transformations created for it through the API. */
export async function captureFixture(t: Test) {
  const ctx = await buildTestApp(t);
  const { call, db } = ctx;
  const a = await makeTenant(db);
  const P = { project_id: a.project.id };
  const capture = async (events: { event: string; properties?: Record<string, unknown> }[]) => {
    const res = await ctx.inject({
      method: 'POST',
      url: '/batch/',
      payload: {
        api_key: a.project.api_token,
        batch: events.map((e) => ({ distinct_id: 'u1', properties: {}, ...e })),
      },
    });
    if (res.statusCode !== 200) throw new Error(`capture answered ${res.statusCode}: ${res.body}`);
  };
  const create = async (body: Record<string, unknown>) => {
    const res = await call('hog_functions_create', {
      key: a.key,
      params: P,
      body: { type: 'transformation', enabled: true, ...body },
    });
    if (res.status !== 201) throw new Error(res.raw);
    return res.body.id as string;
  };
  return { ctx, call, db, a, P, capture, create };
}
