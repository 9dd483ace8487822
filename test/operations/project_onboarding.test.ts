import t from 'tap';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { eq } from 'drizzle-orm';
import { projects } from '../../src/db/schema/index.js';
import { call, db, org } from '../helpers/project-settings-app.js';

t.test('is_generating_demo_data', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_projects_is_generating_demo_data_retrieve', {
    key: a.key,
    params: org(a, a.project.id),
  });
  t.same(res.body, { is_generating_demo_data: false });
  t.equal(
    (await call('organizations_projects_is_generating_demo_data_retrieve', { params: org(a, a.project.id) })).status,
    401,
  );
  t.equal(
    (
      await call('organizations_projects_is_generating_demo_data_retrieve', {
        key: a.key,
        params: org(a, b.project.id),
      })
    ).status,
    404,
  );
});

t.test('product intents and onboarding', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const member = await makeMember(db, a, 1);
  const added = await call('organizations_projects_add_product_intent_partial_update', {
    key: member.key,
    params: org(a, a.project.id),
    body: { product_type: 'product_analytics', intent_context: 'onboarding' },
  });
  t.equal(added.status, 201);
  t.match(added.body.product_intents, [{ product_type: 'product_analytics', onboarding_completed_at: null }]);
  const done = await call('organizations_projects_complete_product_onboarding_partial_update', {
    key: member.key,
    params: org(a, a.project.id),
    body: { product_type: 'product_analytics' },
  });
  t.equal(done.status, 200);
  t.equal(done.body.product_intents.length, 1);
  const completedAt = done.body.product_intents[0].onboarding_completed_at;
  t.ok(completedAt);
  const again = await call('organizations_projects_complete_product_onboarding_partial_update', {
    key: member.key,
    params: org(a, a.project.id),
    body: { product_type: 'product_analytics' },
  });
  t.equal(again.body.product_intents[0].onboarding_completed_at, completedAt, 'the first completion is kept');
  const missing = await call('organizations_projects_complete_product_onboarding_partial_update', {
    key: a.key,
    params: org(a, a.project.id),
    body: {},
  });
  t.match(missing.body, { type: 'validation_error', attr: 'product_type' });
  const readKey = await makeKey(db, a.user, ['project:read']);
  t.equal(
    (
      await call('organizations_projects_add_product_intent_partial_update', {
        key: readKey,
        params: org(a, a.project.id),
        body: { product_type: 'x' },
      })
    ).status,
    201,
    'project:read suffices, as in PostHog',
  );
  t.equal(
    (
      await call('organizations_projects_add_product_intent_partial_update', {
        key: await makeKey(db, a.user, ['dashboard:read']),
        params: org(a, a.project.id),
        body: { product_type: 'x' },
      })
    ).status,
    403,
  );
  const other = await call('organizations_projects_add_product_intent_partial_update', {
    key: a.key,
    params: org(a, b.project.id),
    body: { product_type: 'x' },
  });
  t.equal(other.status, 404);
  const [row] = await db.select().from(projects).where(eq(projects.id, b.project.id));
  t.same(row!.product_intents, []);
});
