import t from 'tap';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { ME, call, db } from '../helpers/organizations-app.js';

t.test('organizations_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_partial_update', {
    key: a.key,
    params: { id: a.organization.id },
    body: { name: 'Renamed', slug: 'nope', id: 'nope', enforce_2fa: true },
  });
  t.equal(res.status, 200);
  t.match(res.body, { id: a.organization.id, name: 'Renamed', slug: a.organization.slug, enforce_2fa: true });
  const member = await makeMember(db, a, 1);
  const denied = await call('organizations_partial_update', {
    key: member.key,
    params: { id: a.organization.id },
    body: { name: 'Member edit' },
  });
  t.same(denied.body, {
    type: 'authentication_error',
    code: 'permission_denied',
    detail: 'Your organization access level is insufficient.',
    attr: null,
  });
  const admin = await makeMember(db, a, 8);
  t.equal(
    (
      await call('organizations_partial_update', {
        key: admin.key,
        params: { id: '@current' },
        body: { name: 'Admin edit' },
      })
    ).status,
    200,
  );
  const invalid = await call('organizations_partial_update', {
    key: a.key,
    params: { id: a.organization.id },
    body: { logo_media_id: 'nope' },
  });
  t.match(invalid.body, { type: 'validation_error', attr: 'logo_media_id', detail: 'Must be a valid UUID.' });
  const other = await call('organizations_partial_update', {
    key: a.key,
    params: { id: b.organization.id },
    body: { name: 'x' },
  });
  t.equal(other.status, 404);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.equal(
    (await call('organizations_partial_update', { key: readOnly, params: { id: a.organization.id }, body: {} })).status,
    403,
  );
});

t.test('organization settings', async (t) => {
  const a = await makeTenant(db);
  const fresh = await call('organizations_retrieve', { key: a.key, params: { id: a.organization.id } });
  t.match(
    fresh.body,
    {
      members_can_invite: true,
      members_can_use_personal_api_keys: true,
      allow_publicly_shared_resources: true,
      is_ai_data_processing_approved: null,
      default_experiment_stats_method: 'bayesian',
      default_anonymize_ips: false,
      default_role_id: null,
    },
    "PostHog's defaults",
  );
  const body = {
    members_can_invite: false,
    allow_publicly_shared_resources: false,
    is_ai_data_processing_approved: true,
    default_experiment_stats_method: 'frequentist',
    default_anonymize_ips: true,
    default_role_id: null,
  };
  const res = await call('organizations_partial_update', { key: a.key, params: { id: a.organization.id }, body });
  t.equal(res.status, 200);
  t.match(res.body, { ...body, default_role_id: null });
  t.match(
    (await call('organizations_retrieve', { key: a.key, params: { id: a.organization.id } })).body,
    { ...body, default_role_id: null },
    'stored',
  );
  t.match(
    (
      await call('organizations_partial_update', {
        key: a.key,
        params: { id: a.organization.id },
        body: { default_experiment_stats_method: 'magic' },
      })
    ).body,
    {
      type: 'validation_error',
      code: 'invalid_choice',
      attr: 'default_experiment_stats_method',
    },
  );
  t.match(
    (
      await call('organizations_partial_update', {
        key: a.key,
        params: { id: a.organization.id },
        body: { default_role_id: 'admins' },
      })
    ).body,
    {
      type: 'validation_error',
      attr: 'default_role_id',
    },
    'there are no roles to name',
  );
  t.match(
    (
      await call('organizations_partial_update', {
        key: a.key,
        params: { id: a.organization.id },
        body: { members_can_invite: 'no' },
      })
    ).body,
    {
      type: 'validation_error',
      attr: 'members_can_invite',
    },
  );

  const inherited = await call('projects_create', { key: a.key, body: { name: 'Inherits' } });
  t.equal(inherited.body.anonymize_ips, true, "a new project takes the organization's default_anonymize_ips");
  const explicit = await call('projects_create', { key: a.key, body: { name: 'Keeps IPs', anonymize_ips: false } });
  t.equal(explicit.body.anonymize_ips, false, 'unless the request says otherwise');
});

t.test('organizations_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const res = await call('organizations_update', {
    key: a.key,
    params: { id: '@current' },
    body: { name: 'Put name', default_anonymize_ips: true },
  });
  t.equal(res.status, 200);
  t.match(
    res.body,
    { name: 'Put name', default_anonymize_ips: true, members_can_invite: true },
    'fields left out keep their values',
  );
  t.match(
    (await call('organizations_update', { key: a.key, params: { id: a.organization.id }, body: { enforce_2fa: true } }))
      .body,
    {
      code: 'required',
      attr: 'name',
    },
  );
  const member = await makeMember(db, a, 1);
  t.equal(
    (await call('organizations_update', { key: member.key, params: { id: a.organization.id }, body: { name: 'x' } }))
      .status,
    403,
  );
  t.equal(
    (await call('organizations_update', { key: a.key, params: { id: b.organization.id }, body: { name: 'Hijack' } }))
      .status,
    404,
  );
  t.equal(
    (await call('organizations_retrieve', { key: b.key, params: { id: b.organization.id } })).body.name,
    b.organization.name,
    'nothing changed',
  );
  t.equal((await call('organizations_update', { params: { id: a.organization.id }, body: { name: 'x' } })).status, 401);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.equal(
    (await call('organizations_update', { key: readOnly, params: { id: a.organization.id }, body: { name: 'x' } }))
      .status,
    403,
  );
});

t.test('members_can_use_personal_api_keys', async (t) => {
  const a = await makeTenant(db);
  const member = await makeMember(db, a, 1);
  const admin = await makeMember(db, a, 8);
  const orgParams = { id: a.organization.id };
  const projectParams = { project_id: a.project.id };
  // Warm the members' cached principals first: the change must reach them at once.
  t.equal((await call('organizations_retrieve', { key: member.key, params: orgParams })).status, 200);
  t.equal((await call('dashboards_list', { key: member.key, params: projectParams })).status, 200);

  const off = await call('organizations_partial_update', {
    key: a.key,
    params: orgParams,
    body: { members_can_use_personal_api_keys: false },
  });
  t.equal(off.body.members_can_use_personal_api_keys, false);
  const refused = {
    type: 'authentication_error',
    code: 'permission_denied',
    detail:
      `Organization '${a.organization.name}' does not allow using personal API keys. ` +
      'Contact an admin to enable personal API keys for this organization.',
    attr: null,
  };
  t.same(
    (await call('organizations_retrieve', { key: member.key, params: orgParams })).body,
    refused,
    'on the organization',
  );
  t.same(
    (await call('dashboards_list', { key: member.key, params: projectParams })).body,
    refused,
    'and on its projects',
  );
  t.same(
    (await call('members_list', { key: member.key, params: { organization_id: a.organization.id } })).body,
    refused,
  );
  t.equal(
    (await call('users_retrieve', { key: member.key, params: ME })).status,
    200,
    'the user endpoint is exempt, as in PostHog',
  );
  t.equal(
    (await call('dashboards_list', { key: admin.key, params: projectParams })).status,
    200,
    'administrators keep their keys',
  );
  t.equal((await call('organizations_retrieve', { key: a.key, params: orgParams })).status, 200, 'owners too');

  await call('organizations_partial_update', {
    key: a.key,
    params: orgParams,
    body: { members_can_use_personal_api_keys: true },
  });
  t.equal(
    (await call('dashboards_list', { key: member.key, params: projectParams })).status,
    200,
    'allowed again at once',
  );
});
