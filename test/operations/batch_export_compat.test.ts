// PostHog's current batch export interface: every field of its schema, PUT, filters and run logs.
import t from 'tap';
import { makeKey } from '../helpers/factories.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { call, db, at, a, b, PA, NOOP, makeExport, backfill } from '../helpers/batch-export-compat-app.js';

t.test('responses carry hogql_query, filters and destination.integration', async (t) => {
  const exp = await makeExport({
    hogql_query: 'SELECT event, properties.$browser AS browser FROM events',
    filters: [{ key: '$browser', operator: 'exact', value: 'Chrome', type: 'event' }],
  });
  t.equal(exp.hogql_query, 'SELECT event, properties.$browser AS browser FROM events');
  t.same(exp.filters, [{ key: '$browser', operator: 'exact', value: 'Chrome', type: 'event' }]);
  t.equal(exp.destination.integration, null);
  const plain = await makeExport({});
  t.equal(plain.hogql_query, '');
  t.equal(plain.filters, null);
  const got = await call('batch_exports_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, id: exp.id },
  });
  t.equal(got.status, 200);
  t.same(got.body.filters, exp.filters);
});

t.test('filters are checked and select the exported events', async (t) => {
  const bad = await call('projects_batch_exports_create', {
    key: a.key,
    params: PA,
    body: { name: 'x', destination: NOOP, interval: 'hour', filters: [{ key: 'k', operator: 'almost', value: 1 }] },
  });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', attr: 'filters', detail: /Operator "almost" is not supported/ });
  const persons = await call('projects_batch_exports_create', {
    key: a.key,
    params: PA,
    body: { name: 'x', model: 'persons', destination: NOOP, interval: 'hour', filters: [{ key: 'k', value: 'v' }] },
  });
  t.equal(persons.status, 400);
  t.equal(persons.body.attr, 'filters');

  await insertEvents(
    db,
    a.project.id,
    spread(6, at(0), at(1), (i) => ({ properties: { plan: i % 3 === 0 ? 'pro' : 'free' } })),
  );
  const exp = await makeExport({ filters: [{ key: 'plan', operator: 'exact', value: 'pro', type: 'event' }] });
  const { runs } = await backfill(exp, 1);
  t.equal(runs.length, 1);
  t.equal(runs[0].records_total_count, 2, 'only the matching events are exported');
});

t.test('PUT replaces at both scopes; another tenant gets 404 and nothing changes', async (t) => {
  const exp = await makeExport({ name: 'before' });
  const put = await call('projects_batch_exports_update', {
    key: a.key,
    params: { ...PA, id: exp.id },
    body: { name: 'after', destination: NOOP, interval: 'day' },
  });
  t.equal(put.status, 200);
  t.match(put.body, { name: 'after', interval: 'day', paused: true });
  const org = await call('batch_exports_update', {
    key: a.key,
    params: { organization_id: a.organization.id, id: exp.id },
    body: { name: 'org', destination: NOOP, interval: 'hour' },
  });
  t.equal(org.status, 200);
  t.equal(org.body.name, 'org');
  const missing = await call('projects_batch_exports_update', {
    key: a.key,
    params: { ...PA, id: exp.id },
    body: { name: 'x' },
  });
  t.equal(missing.status, 400);
  t.equal(missing.body.type, 'validation_error');
  t.equal(
    (
      await call('projects_batch_exports_update', {
        params: { ...PA, id: exp.id },
        body: { name: 'x', destination: NOOP, interval: 'hour' },
      })
    ).status,
    401,
  );
  const reader = await makeKey(db, a.user, ['batch_export:read']);
  t.equal(
    (
      await call('projects_batch_exports_update', {
        key: reader,
        params: { ...PA, id: exp.id },
        body: { name: 'x', destination: NOOP, interval: 'hour' },
      })
    ).status,
    403,
  );
  const body = { name: 'hijack', destination: NOOP, interval: 'hour' };
  t.equal(
    (await call('projects_batch_exports_update', { key: b.key, params: { ...PA, id: exp.id }, body })).status,
    403,
    "another tenant's project",
  );
  t.equal(
    (
      await call('projects_batch_exports_update', {
        key: b.key,
        params: { project_id: b.project.id, id: exp.id },
        body,
      })
    ).status,
    404,
    "another tenant's export on its own path",
  );
  t.equal(
    (
      await call('batch_exports_update', {
        key: b.key,
        params: { organization_id: b.organization.id, id: exp.id },
        body,
      })
    ).status,
    404,
  );
  const after = await call('projects_batch_exports_retrieve', { key: a.key, params: { ...PA, id: exp.id } });
  t.equal(after.body.name, 'org');
});

// After the filters test: a backfill starts at the project's earliest event, and its events at hours 0-1 open the
// range, so this backfill has three runs.
t.test('run logs are the entries of that run', async (t) => {
  await insertEvents(db, a.project.id, spread(3, at(2), at(3)));
  const exp = await makeExport({});
  const { runs } = await backfill(exp, 3);
  t.equal(runs.length, 3);
  const P = { ...PA, batch_export_id: exp.id };
  for (const run of runs) {
    const logs = await call('projects_batch_exports_runs_logs_retrieve', { key: a.key, params: { ...P, id: run.id } });
    t.equal(logs.status, 200);
    t.ok(logs.body.count > 0);
    t.ok(logs.body.results.every((l: any) => l.instance_id === run.id && l.log_source_id === exp.id));
  }
  const org = await call('batch_exports_runs_logs_retrieve', {
    key: a.key,
    params: { organization_id: a.organization.id, batch_export_id: exp.id, id: runs[0].id },
    query: { level: ['ERROR'] },
  });
  t.equal(org.status, 200);
  t.equal(org.body.count, 0);
  t.equal(
    (
      await call('projects_batch_exports_runs_logs_retrieve', {
        key: b.key,
        params: { project_id: b.project.id, batch_export_id: exp.id, id: runs[0].id },
      })
    ).status,
    404,
  );
  t.equal(
    (await call('projects_batch_exports_runs_logs_retrieve', { key: b.key, params: { ...P, id: runs[0].id } })).status,
    403,
  );
  t.equal((await call('projects_batch_exports_runs_logs_retrieve', { params: { ...P, id: runs[0].id } })).status, 401);
});
