import t from 'tap';
import { makeTenant } from '../helpers/factories.js';
import { call, db, org } from '../helpers/project-settings-app.js';

t.test('activity: creation and changed settings, newest first, paged', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const created = await call('organizations_projects_create', {
    key: a.key,
    params: { organization_id: a.organization.id },
    body: { name: 'Logged' },
  });
  const id = created.body.id;
  await call('projects_partial_update', { key: a.key, params: { id }, body: { name: 'Logged', anonymize_ips: true } });
  await call('projects_partial_update', { key: a.key, params: { id }, body: { week_start_day: 1 } });
  const page = await call('organizations_projects_activity_retrieve', {
    key: a.key,
    params: org(a, id),
    query: { limit: 2 },
  });
  t.equal(page.body.total_count, 3);
  t.match(page.body.results, [
    { activity: 'updated', detail: { changes: [{ field: 'week_start_day', before: null, after: 1 }] } },
    { activity: 'updated', detail: { changes: [{ field: 'anonymize_ips', before: false, after: true }] } },
  ]);
  t.equal(page.body.results[1].detail.changes.length, 1, 'an unchanged name is not logged');
  t.match(page.body.next, /page=2/);
  const last = await call('organizations_projects_activity_retrieve', {
    key: a.key,
    params: org(a, id),
    query: { page: 2, limit: 2 },
  });
  t.match(last.body.results, [{ activity: 'created', detail: { name: 'Logged' } }]);
  t.equal(
    (await call('organizations_projects_activity_retrieve', { key: a.key, params: org(a, b.project.id) })).status,
    404,
  );
  t.equal(
    (await call('organizations_projects_activity_retrieve', { key: a.key, params: org(b, b.project.id) })).status,
    403,
  );
  t.equal((await call('organizations_projects_activity_retrieve', { params: org(a, id) })).status, 401);
  t.match(
    (await call('organizations_projects_activity_retrieve', { key: a.key, params: org(a, id), query: { limit: 0 } }))
      .body,
    {
      type: 'validation_error',
      attr: 'limit',
    },
  );
});
