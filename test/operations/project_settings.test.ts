import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeProject, makeTenant, makeUser } from '../helpers/factories.js';
import { addMembership } from '../../src/organizations/queries.js';
import { capture, send, storedEvents } from '../helpers/events.js';
import { and, eq } from 'drizzle-orm';
import { dashboards, organization_memberships, projects, users } from '../../src/db/schema/index.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const org = (tenant: { organization: { id: string } }, id: number | string) => ({
  organization_id: tenant.organization.id,
  id,
});

t.test('every PostHog project field, with its default until written', async (t) => {
  const a = await makeTenant(db);
  const res = await call('organizations_projects_retrieve', { key: a.key, params: org(a, a.project.id) });
  t.equal(res.status, 200);
  t.match(res.body, {
    has_group_types: false,
    group_types: [],
    live_events_token: null,
    person_on_events_querying_enabled: false,
    default_modifiers: { personsOnEventsMode: 'disabled' },
    product_intents: [],
    secret_api_token: null,
    data_attributes: ['data-attr'],
    capture_console_log_opt_in: true,
    capture_performance_opt_in: true,
    session_recording_opt_in: false,
    flags_persistence_default: false,
    correlation_config: {},
    path_cleaning_filters: [],
    week_start_day: null,
    primary_dashboard: null,
  });
});

t.test('settings are stored key by key and read back; bad values are 400s that change nothing', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const first = await call('projects_partial_update', {
    key: a.key,
    params: { id: a.project.id },
    body: {
      week_start_day: 1,
      session_recording_sample_rate: '0.50',
      surveys_opt_in: true,
      recording_domains: ['https://a.example'],
    },
  });
  t.equal(first.status, 200);
  const second = await call('organizations_projects_partial_update', {
    key: a.key,
    params: org(a, a.project.id),
    body: { data_attributes: ['data-test'], modifiers: { x: 1 }, secret_api_token: 'phs_mine', has_group_types: true },
  });
  t.match(second.body, {
    week_start_day: 1,
    session_recording_sample_rate: '0.50',
    surveys_opt_in: true,
    recording_domains: ['https://a.example'],
    data_attributes: ['data-test'],
    modifiers: { x: 1 },
    secret_api_token: null,
    has_group_types: false,
  });
  const before = (await call('projects_retrieve', { key: a.key, params: { id: a.project.id } })).body;
  const bad = [
    [{ week_start_day: 3 }, 'week_start_day'],
    [{ session_recording_minimum_duration_milliseconds: 30001 }, 'session_recording_minimum_duration_milliseconds'],
    [{ autocapture_web_vitals_allowed_metrics: ['TTFB'] }, 'autocapture_web_vitals_allowed_metrics__0'],
    [{ session_recording_sample_rate: 'half' }, 'session_recording_sample_rate'],
    [{ capture_console_log_opt_in: 'yes' }, 'capture_console_log_opt_in'],
  ] as const;
  for (const [body, attr] of bad) {
    const res = await call('projects_partial_update', { key: a.key, params: { id: a.project.id }, body });
    t.match(res.body, { type: 'validation_error', attr }, attr);
  }
  const after = (await call('projects_retrieve', { key: a.key, params: { id: a.project.id } })).body;
  t.same(after, before, 'refused writes changed nothing');
  const other = await call('organizations_projects_partial_update', {
    key: a.key,
    params: org(a, b.project.id),
    body: { week_start_day: 0 },
  });
  t.equal(other.status, 404);
  const [row] = await db.select().from(projects).where(eq(projects.id, b.project.id));
  t.same(row!.settings, {}, 'another organization’s project is untouched');
});

t.test('primary_dashboard names a dashboard of the project', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const [mine] = await db.insert(dashboards).values({ project_id: a.project.id, name: 'Home' }).returning();
  const [theirs] = await db.insert(dashboards).values({ project_id: b.project.id, name: 'Theirs' }).returning();
  const set = await call('projects_update', {
    key: a.key,
    params: { id: a.project.id },
    body: { primary_dashboard: mine!.id },
  });
  t.equal(set.body.primary_dashboard, mine!.id);
  const refused = await call('projects_update', {
    key: a.key,
    params: { id: a.project.id },
    body: { primary_dashboard: theirs!.id },
  });
  t.same(refused.body, {
    type: 'validation_error',
    code: 'does_not_exist',
    detail: `Invalid pk "${theirs!.id}" - object does not exist.`,
    attr: 'primary_dashboard',
  });
  await db.delete(dashboards).where(eq(dashboards.id, mine!.id));
  t.equal((await call('projects_retrieve', { key: a.key, params: { id: a.project.id } })).body.primary_dashboard, null);
});

t.test('PUT on both routes: scope, tenancy, and fields left out keep their values', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_projects_update', {
    key: a.key,
    params: org(a, a.project.id),
    body: { name: 'Put', anonymize_ips: true },
  });
  t.match(res.body, { name: 'Put', anonymize_ips: true, timezone: 'UTC' });
  const again = await call('projects_update', {
    key: a.key,
    params: { id: a.project.id },
    body: { timezone: 'Europe/Paris' },
  });
  t.match(again.body, { name: 'Put', anonymize_ips: true, timezone: 'Europe/Paris' });
  const readOnly = await makeKey(db, a.user, ['project:read']);
  t.equal((await call('projects_update', { key: readOnly, params: { id: a.project.id }, body: {} })).status, 403);
  t.equal((await call('organizations_projects_update', { params: org(a, a.project.id), body: {} })).status, 401);
  t.equal(
    (await call('projects_update', { key: a.key, params: { id: b.project.id }, body: { name: 'x' } })).status,
    404,
  );
  t.equal(
    (await call('organizations_projects_update', { key: a.key, params: org(b, b.project.id), body: { name: 'x' } }))
      .status,
    403,
  );
  t.equal(
    (await call('organizations_projects_update', { key: a.key, params: org(a, b.project.id), body: { name: 'x' } }))
      .status,
    404,
  );
  const [row] = await db.select().from(projects).where(eq(projects.id, b.project.id));
  t.equal(row!.name, 'Default project');
});

t.test('reset_token: a new token, the old one stops ingesting, admins only', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const old = a.project.api_token;
  await capture(ctx, old, [{ event: 'before', distinct_id: 'u1' }]);
  const member = await makeMember(db, a, 1);
  const denied = await call('organizations_projects_reset_token_partial_update', {
    key: member.key,
    params: org(a, a.project.id),
  });
  t.equal(denied.status, 403);
  const res = await call('organizations_projects_reset_token_partial_update', {
    key: a.key,
    params: org(a, a.project.id),
  });
  t.equal(res.status, 200);
  t.match(res.body.api_token, /^phc_/);
  t.not(res.body.api_token, old);
  const refused = await send(ctx, 'capture_batch_create', {
    body: JSON.stringify({ api_key: old, batch: [{ event: 'after', distinct_id: 'u1' }] }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(refused.status, 401, 'the old token is refused');
  await capture(ctx, res.body.api_token, [{ event: 'new', distinct_id: 'u1' }]);
  t.same(
    (await storedEvents(db, a.project.id)).map((e) => e.event),
    ['before', 'new'],
  );
  const other = await call('organizations_projects_reset_token_partial_update', {
    key: a.key,
    params: org(a, b.project.id),
  });
  t.equal(other.status, 404);
  const [row] = await db.select().from(projects).where(eq(projects.id, b.project.id));
  t.equal(row!.api_token, b.project.api_token, 'another tenant’s token is unchanged');
  const activity = await call('organizations_projects_activity_retrieve', { key: a.key, params: org(a, a.project.id) });
  t.match(activity.body.results[0], {
    activity: 'updated',
    scope: 'Team',
    item_id: String(a.project.id),
    user: { id: a.user.id },
    detail: { changes: [{ field: 'api_token', before: old, after: res.body.api_token }] },
  });
});

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

t.test('change_organization follows PostHog’s rules', async (t) => {
  const a = await makeTenant(db);
  const target = await makeTenant(db);
  const stranger = await makeTenant(db);
  const moving = await makeProject(db, a);
  // The owner of `a` is a member (not admin) of the target first.
  await addMembership(db, target.organization.id, a.user.id, 1);
  const notAdmin = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: target.organization.id },
  });
  t.same(notAdmin.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'You must be an admin of both the source and target organizations to move a project.',
    attr: null,
  });
  const notMember = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: stranger.organization.id },
  });
  t.equal(notMember.body.detail, 'You must be a member of the target organization to move a project.');
  const same = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: a.organization.id },
  });
  t.equal(same.body.detail, 'Project is already in the target organization.');
  const bad = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: 'nope' },
  });
  t.match(bad.body, { type: 'validation_error', attr: 'organization_id' });
  const foreign = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, stranger.project.id),
    body: { organization_id: target.organization.id },
  });
  t.equal(foreign.status, 404, 'another tenant’s project cannot be moved');

  // Made admin of the target; a user whose current project it is and who is not in the target loses it.
  await db
    .update(organization_memberships)
    .set({ level: 8 })
    .where(
      and(
        eq(organization_memberships.organization_id, target.organization.id),
        eq(organization_memberships.user_id, a.user.id),
      ),
    );
  await ctx.app.authCache.invalidate();
  const bystander = await makeUser(db);
  await addMembership(db, a.organization.id, bystander.id, 1);
  await db
    .update(users)
    .set({ current_team_id: moving.id, current_organization_id: a.organization.id })
    .where(eq(users.id, bystander.id));
  await db.update(users).set({ current_team_id: moving.id }).where(eq(users.id, a.user.id));
  const res = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: target.organization.id },
  });
  t.equal(res.status, 200);
  t.equal(res.body.organization, target.organization.id);
  const [owner] = await db.select().from(users).where(eq(users.id, a.user.id));
  t.equal(owner!.current_organization_id, target.organization.id, 'a member of the target follows the project');
  const [left] = await db.select().from(users).where(eq(users.id, bystander.id));
  t.same([left!.current_team_id, left!.current_organization_id], [null, null]);
  t.equal((await call('organizations_projects_retrieve', { key: a.key, params: org(a, moving.id) })).status, 404);
  t.equal((await call('organizations_projects_retrieve', { key: a.key, params: org(target, moving.id) })).status, 200);
  t.equal(
    (
      await call('organizations_projects_change_organization_create', {
        key: await makeKey(db, a.user, ['project:read']),
        params: org(target, moving.id),
        body: { organization_id: a.organization.id },
      })
    ).status,
    403,
  );
});

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
