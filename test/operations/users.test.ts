import t from 'tap';
import { eq } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant, makeUser } from '../helpers/factories.js';
import { createOrganization } from '../../src/organizations/queries.js';
import { organization_domains, users } from '../../src/db/schema/index.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const ME = { uuid: '@me' };
const meOnly = {
  type: 'authentication_error',
  code: 'permission_denied',
  detail: "As a non-staff user you're only allowed to access the `@me` user instance.",
  attr: null,
};

t.test('users_retrieve', async (t) => {
  const a = await makeTenant(db);
  const res = await call('users_retrieve', { key: a.key, params: ME });
  t.equal(res.status, 200);
  t.match(res.body, {
    id: a.user.id,
    uuid: a.user.uuid,
    email: a.user.email,
    organization: {
      id: a.organization.id,
      membership_level: 15,
      member_count: 1,
      teams: [{ id: a.project.id }],
      default_role_id: null,
    },
    team: { id: a.project.id },
    role_at_organization: null,
    pending_email: null,
    has_password: false,
    is_impersonated: false,
    is_2fa_enabled: false,
    has_social_auth: false,
    has_sso_enforcement: false,
    scene_personalisation: [],
    toolbar_mode: 'toolbar',
    anonymize_data: false,
    events_column_config: { active: 'DEFAULT' },
    notification_settings: {
      plugin_disabled: true,
      all_weekly_digest_disabled: false,
      project_weekly_digest_disabled: {},
    },
  });
  t.equal(res.body.organizations.length, 1);
  t.equal(res.body.organizations[0].members_can_use_personal_api_keys, true);

  // A verified domain of the current organization that enforces a provider for the user's address.
  const domain = a.user.email.split('@')[1]!;
  await db.insert(organization_domains).values({
    organization_id: a.organization.id,
    domain,
    verification_challenge: 'c',
    verified_at: new Date(),
    sso_enforcement: 'google-oauth2',
  });
  t.equal(
    (await call('users_retrieve', { key: a.key, params: ME })).body.has_sso_enforcement,
    true,
    'SSO enforced by a verified domain',
  );
  await db.delete(organization_domains).where(eq(organization_domains.domain, domain));

  const scoped = await makeKey(db, a.user, ['user:read'], { scoped_teams: [a.project.id] });
  t.equal((await call('users_retrieve', { key: scoped, params: ME })).status, 200, '@me is exempt from key scoping');
  t.equal((await call('users_retrieve', { key: await makeKey(db, a.user, ['project:read']), params: ME })).status, 403);
  t.equal((await call('users_retrieve', { params: ME })).status, 401);

  const b = await makeTenant(db);
  t.same(
    (await call('users_retrieve', { key: a.key, params: { uuid: b.user.uuid } })).body,
    meOnly,
    "another user's uuid",
  );
  t.same(
    (await call('users_retrieve', { key: a.key, params: { uuid: a.user.uuid } })).body,
    meOnly,
    'even their own uuid, as PostHog',
  );

  const staff = await makeTenant(db);
  await db.update(users).set({ is_staff: true }).where(eq(users.id, staff.user.id));
  const seen = await call('users_retrieve', { key: staff.key, params: { uuid: b.user.uuid } });
  t.match(seen.body, { uuid: b.user.uuid, organization: { id: b.organization.id } }, 'staff may name anyone');
  t.equal(
    (await call('users_retrieve', { key: staff.key, params: { uuid: '00000000-0000-4000-8000-000000000000' } })).status,
    404,
  );
});

t.test('users_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('users_partial_update', {
    key: a.key,
    params: ME,
    body: {
      first_name: 'Ada',
      role_at_organization: 'engineering',
      theme_mode: 'dark',
      toolbar_mode: 'disabled',
      anonymize_data: true,
      hedgehog_config: { color: 'green' },
      has_seen_product_intro_for: { product_analytics: true },
      notification_settings: { plugin_disabled: false, project_weekly_digest_disabled: { [a.project.id]: true } },
      id: 999,
      is_email_verified: true,
    },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    id: a.user.id,
    first_name: 'Ada',
    role_at_organization: 'engineering',
    theme_mode: 'dark',
    toolbar_mode: 'disabled',
    anonymize_data: true,
    hedgehog_config: { color: 'green' },
    is_email_verified: null,
    notification_settings: {
      plugin_disabled: false,
      discussions_mentioned: true,
      project_weekly_digest_disabled: { [a.project.id]: true },
    },
  });
  const more = await call('users_partial_update', {
    key: a.key,
    params: ME,
    body: { notification_settings: { project_weekly_digest_disabled: { [b.project.id]: false } } },
  });
  t.same(
    more.body.notification_settings.project_weekly_digest_disabled,
    { [a.project.id]: true, [b.project.id]: false },
    'the per-project map is merged',
  );
  t.equal(more.body.notification_settings.plugin_disabled, false, 'earlier settings are kept');

  const member = await makeMember(db, a, 1);
  const embedded = await call('members_list', {
    key: member.key,
    params: { organization_id: a.organization.id },
    query: { email: a.user.email },
  });
  t.equal(
    embedded.body.results[0].user.role_at_organization,
    'engineering',
    'the role shows wherever the user is embedded',
  );

  t.match(
    (await call('users_partial_update', { key: a.key, params: ME, body: { role_at_organization: 'wizard' } })).body,
    {
      type: 'validation_error',
      code: 'invalid_choice',
      attr: 'role_at_organization',
    },
  );
  t.match(
    (await call('users_partial_update', { key: a.key, params: ME, body: { notification_settings: { bogus: true } } }))
      .body,
    {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'Key bogus is not valid as a key for notification settings',
      attr: 'notification_settings',
    },
    "PostHog's wording, naming the key",
  );
  t.same((await call('users_partial_update', { key: a.key, params: ME, body: { password: 'hunter2hunter2' } })).body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'This server has no password login.',
    attr: 'password',
  });
  t.match((await call('users_partial_update', { key: a.key, params: ME, body: { is_staff: true } })).body, {
    code: 'permission_denied',
    detail: 'You are not a staff user, contact your instance admin.',
  });
  t.same((await call('users_partial_update', { key: a.key, params: ME, body: { email: b.user.email } })).body, {
    type: 'validation_error',
    code: 'unique',
    detail: 'user with this email address already exists.',
    attr: 'email',
  });
  const email = `renamed-${a.user.id}@Example.COM`;
  t.equal(
    (await call('users_partial_update', { key: a.key, params: ME, body: { email } })).body.email,
    `renamed-${a.user.id}@example.com`,
  );

  // Another user: refused, and nothing of theirs changes.
  t.same(
    (await call('users_partial_update', { key: a.key, params: { uuid: b.user.uuid }, body: { first_name: 'Mallory' } }))
      .body,
    meOnly,
  );
  const [bRow] = await db.select().from(users).where(eq(users.id, b.user.id));
  t.equal(bRow!.first_name, 'Test', "the other user's row is untouched");

  t.equal((await call('users_partial_update', { params: ME, body: {} })).status, 401);
  const readOnly = await makeKey(db, a.user, ['user:read']);
  t.match((await call('users_partial_update', { key: readOnly, params: ME, body: { first_name: 'x' } })).body, {
    detail: "API key missing required scope 'user:write'",
  });
});

t.test('users_partial_update: current organization and project', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const { organization: second, project: secondProject } = await createOrganization(db, { name: 'Second' }, a.user.id);
  // createOrganization made the second one current; go back through the API.
  const back = await call('users_partial_update', {
    key: a.key,
    params: ME,
    body: { set_current_organization: a.organization.id },
  });
  t.equal(back.status, 200);
  t.match(
    back.body,
    { organization: { id: a.organization.id }, team: { id: a.project.id } },
    'the organization and its first project',
  );

  const team = await call('users_partial_update', {
    key: a.key,
    params: ME,
    body: { set_current_team: String(secondProject.id) },
  });
  t.match(
    team.body,
    { organization: { id: second.id }, team: { id: secondProject.id } },
    'a project brings its organization',
  );
  t.same(
    (
      await call('users_partial_update', {
        key: a.key,
        params: ME,
        body: { set_current_organization: a.organization.id, set_current_team: String(secondProject.id) },
      })
    ).body,
    {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'Team must belong to the same organization in set_current_organization.',
      attr: 'set_current_team',
    },
  );
  t.same(
    (
      await call('users_partial_update', {
        key: a.key,
        params: ME,
        body: { set_current_organization: b.organization.id },
      })
    ).body,
    {
      type: 'validation_error',
      code: 'does_not_exist',
      detail: `Object with id=${b.organization.id} does not exist.`,
      attr: 'set_current_organization',
    },
    "another tenant's organization",
  );
  t.match(
    (await call('users_partial_update', { key: a.key, params: ME, body: { set_current_team: String(b.project.id) } }))
      .body,
    {
      code: 'does_not_exist',
      attr: 'set_current_team',
    },
    "another tenant's project",
  );
  const me = await call('users_retrieve', { key: a.key, params: ME });
  t.match(me.body, { organization: { id: second.id }, team: { id: secondProject.id } }, 'refusals change nothing');
});

t.test('users_update', async (t) => {
  const a = await makeTenant(db);
  const res = await call('users_update', {
    key: a.key,
    params: ME,
    body: { email: a.user.email, last_name: 'Lovelace' },
  });
  t.equal(res.status, 200);
  t.match(res.body, { last_name: 'Lovelace', first_name: 'Test' }, 'fields left out keep their values');
  t.match((await call('users_update', { key: a.key, params: ME, body: { last_name: 'x' } })).body, {
    code: 'required',
    attr: 'email',
  });
  const other = await makeUser(db);
  t.same(
    (await call('users_update', { key: a.key, params: { uuid: other.uuid }, body: { email: a.user.email } })).body,
    meOnly,
  );
  t.equal((await call('users_update', { params: ME, body: { email: a.user.email } })).status, 401);
});

t.test('users_list', async (t) => {
  const a = await makeTenant(db);
  await makeTenant(db);
  const res = await call('users_list', { key: a.key });
  t.equal(res.status, 200);
  t.equal(res.body.count, 1, 'only the caller');
  t.equal(res.body.results[0].uuid, a.user.uuid);
  t.equal((await call('users_list', { key: a.key, query: { email: 'nobody@example.com' } })).body.count, 0);

  const staff = await makeTenant(db);
  await db.update(users).set({ is_staff: true }).where(eq(users.id, staff.user.id));
  const all = await call('users_list', { key: staff.key, query: { email: a.user.email } });
  t.equal(all.body.count, 1, 'staff see every user');
  t.equal(all.body.results[0].uuid, a.user.uuid);
  t.match((await call('users_list', { key: a.key, query: { is_staff: 'maybe' } })).body, {
    type: 'validation_error',
    attr: 'is_staff',
  });
  t.equal((await call('users_list')).status, 401);
  t.equal((await call('users_list', { key: await makeKey(db, a.user, ['project:read']) })).status, 403);
});

t.test('users_hedgehog_config', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  t.same((await call('users_hedgehog_config_retrieve', { key: a.key, params: ME })).body, {}, 'unset is {}');
  const res = await call('users_hedgehog_config_partial_update', {
    key: a.key,
    params: ME,
    body: { color: 'blue', accessories: ['hat'] },
  });
  t.equal(res.status, 200);
  t.same(res.body, { color: 'blue', accessories: ['hat'] });
  await call('users_hedgehog_config_partial_update', { key: a.key, params: ME, body: { enabled: true } });
  t.same(
    (await call('users_hedgehog_config_retrieve', { key: a.key, params: ME })).body,
    { enabled: true },
    'the body replaces the settings',
  );
  t.same((await call('users_retrieve', { key: a.key, params: ME })).body.hedgehog_config, { enabled: true });
  t.match(
    (
      await call('users_hedgehog_config_partial_update', {
        key: a.key,
        params: ME,
        payload: '[1]',
        headers: { 'content-type': 'application/json' },
      })
    ).body,
    {
      type: 'validation_error',
    },
  );
  t.same(
    (await call('users_hedgehog_config_partial_update', { key: a.key, params: { uuid: b.user.uuid }, body: { x: 1 } }))
      .body,
    meOnly,
  );
  t.same(
    (await call('users_hedgehog_config_retrieve', { key: b.key, params: ME })).body,
    {},
    "the other user's settings are untouched",
  );
  t.equal((await call('users_hedgehog_config_retrieve', { params: ME })).status, 401);
  const readOnly = await makeKey(db, a.user, ['user:read']);
  t.equal((await call('users_hedgehog_config_partial_update', { key: readOnly, params: ME, body: {} })).status, 403);
});
