// Shared by property_definitions*.test.ts: one app, a list reader and a project seeded with known properties.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { buildTestApp } from './app.js';
import { makeTenant, type Tenant } from './factories.js';
import { capture } from './events.js';

export const ctx = await buildTestApp(t);
export const { call, db } = ctx;
export const NOT_FOUND = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };

export type Def = {
  id: string;
  name: string;
  property_type: string | null;
  is_numerical: boolean;
  is_seen_on_filtered_events: boolean | null;
};

export async function list(tenant: Tenant, query: Record<string, string | number | boolean> = {}): Promise<Def[]> {
  const res = await call('property_definitions_list', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    query,
  });
  if (res.status !== 200) throw new Error(`${res.status} ${res.raw}`);
  return res.body.results;
}
export const names = (defs: Def[]) => defs.map((d) => d.name);
export const event = (name: string, properties: Record<string, unknown>) => ({
  event: name,
  distinct_id: 'd1',
  uuid: randomUUID(),
  properties,
});

/** A project whose events carried a known set of properties. */
export async function seeded(): Promise<Tenant> {
  const a = await makeTenant(db);
  const recent = Math.floor(Date.now() / 1000) - 60;
  await capture(ctx, a.project.api_token, [
    event('$pageview', {
      $current_url: 'https://x',
      $browser: 'Chrome',
      utm_source: 42,
      plan: 'pro',
      distinct_id: 'd1',
    }),
    event('purchase', {
      amount: 12.5,
      paid: true,
      verified: 'false',
      created_at: '2024-03-01T10:00:00Z',
      signup_time: recent,
      price: recent,
      note: null,
    }),
    event('purchase', { note: 'late type', $feature_flag_response: true, '$feature/beta': false }),
    event('$identify', { $set: { email: 'a@example.com', age: 31 }, $set_once: { first_seen: '2024-01-01' } }),
  ]);
  return a;
}
