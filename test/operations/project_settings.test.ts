import t from 'tap';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { capture, send, storedEvents } from '../helpers/events.js';
import { eq } from 'drizzle-orm';
import { dashboards, projects } from '../../src/db/schema/index.js';
import { ctx, call, db, org } from '../helpers/project-settings-app.js';

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
