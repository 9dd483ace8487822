// A plugin config's secret settings stay write-only for their whole life: a later schema without the
// `secret` flag (a PATCHed config_schema, or an updated plugin.json) does not unmask them.
import t, { type Test } from 'tap';
import { eq } from 'drizzle-orm';
import { plugin_configs } from '../src/db/schema/index.js';
import { buildTestApp } from './helpers/app.js';
import { makeTenant } from './helpers/factories.js';
import { CONFIG_SCHEMA, makePlugin, SECRET, SOURCES } from './helpers/plugins.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const UNFLAGGED = CONFIG_SCHEMA.map(({ secret: _secret, ...field }) => field);

async function setup(t: Test) {
  const a = await makeTenant(db);
  const plugin = await makePlugin(ctx, a, 'pipeline_destinations', { config_schema: CONFIG_SCHEMA });
  const made = await call('plugin_configs_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { plugin: plugin.id, order: 1, enabled: true, config: { host: 'h.example', apiKey: 'hunter2-unmasked' } },
  });
  t.equal(made.status, 201);
  const reads = async () => {
    const params = { project_id: a.project.id };
    return [
      await call('plugin_configs_retrieve', { key: a.key, params: { ...params, id: made.body.id } }),
      await call('plugin_configs_list', { key: a.key, params }),
      await call('pipeline_destinations_exports_unsubscribe_configs_retrieve', {
        key: a.key,
        params: { organization_id: a.organization.id },
      }),
      await call('pipeline_destinations_activity_retrieve', {
        key: a.key,
        params: { organization_id: a.organization.id },
      }),
    ];
  };
  return { a, plugin, made, reads };
}

t.test('a secret stays masked after config_schema is PATCHed without the flag', async (t) => {
  const { a, plugin, made, reads } = await setup(t);
  const patched = await call('pipeline_destinations_partial_update', {
    key: a.key,
    params: { organization_id: a.organization.id, id: plugin.id },
    body: { config_schema: UNFLAGGED },
  });
  t.equal(patched.status, 200);
  t.same(patched.body.config_schema, UNFLAGGED);
  for (const res of await reads()) {
    t.equal(res.status, 200);
    t.notOk(res.raw.includes('hunter2-unmasked'), 'the secret is in no read');
  }
  const [got] = await reads();
  t.same(got!.body.config, { host: 'h.example', apiKey: SECRET });

  // Sending back what was read keeps the secret; a new value stays secret although the schema no longer says so.
  const kept = await call('plugin_configs_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: made.body.id },
    body: { config: { host: 'h2.example', apiKey: SECRET } },
  });
  t.same(kept.body.config, { host: 'h2.example', apiKey: SECRET });
  const [before] = await db.select().from(plugin_configs).where(eq(plugin_configs.id, made.body.id));
  const changed = await call('plugin_configs_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: made.body.id },
    body: { config: { host: 'h2.example', apiKey: 'second-secret' } },
  });
  t.same(changed.body.config, { host: 'h2.example', apiKey: SECRET });
  const [after] = await db.select().from(plugin_configs).where(eq(plugin_configs.id, made.body.id));
  t.not(after!.secrets.apiKey, before!.secrets.apiKey, 'the new value was stored');
  for (const res of await reads()) t.notOk(res.raw.includes('second-secret'));
});

t.test('a secret stays masked after plugin.json is updated without the flag', async (t) => {
  const { a, plugin, reads } = await setup(t);
  const json = JSON.stringify({ name: 'Webhook', config: UNFLAGGED });
  const updated = await call('pipeline_destinations_update_source_partial_update', {
    key: a.key,
    params: { organization_id: a.organization.id, id: plugin.id },
    body: { 'plugin.json': json, 'index.ts': SOURCES.pipeline_destinations },
  });
  t.equal(updated.status, 200);
  const schema = await call('pipeline_destinations_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, id: plugin.id },
  });
  t.same(schema.body.config_schema, UNFLAGGED, 'the new schema has no secret');
  for (const res of await reads()) {
    t.equal(res.status, 200);
    t.notOk(res.raw.includes('hunter2-unmasked'), 'the secret is in no read');
  }
  t.same((await reads())[0]!.body.config, { host: 'h.example', apiKey: SECRET });
});
