// Shared by event_definitions*.test.ts: one app and a project seeded with four events.
import t from 'tap';
import { buildTestApp } from './app.js';
import { makeTenant } from './factories.js';
import { capture, definitions } from './events.js';

export const ctx = await buildTestApp(t);
export const { call, db } = ctx;

export async function seeded() {
  const tenant = await makeTenant(db);
  await capture(ctx, tenant.project.api_token, [
    { event: '$pageview', distinct_id: 'd' },
    { event: 'signed up', distinct_id: 'd' },
    { event: 'Purchase Completed', distinct_id: 'd' },
    { event: '$autocapture', distinct_id: 'd' },
  ]);
  const defs = await definitions(db, tenant.project.id);
  const id = (name: string) => defs.find((d) => d.name === name)!.id;
  return { tenant, id };
}
