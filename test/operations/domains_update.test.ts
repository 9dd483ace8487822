import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns.js';
import { levelDenied, missingScope, uniqueDomain } from '../helpers/domains.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';

// Changing domains: settings, renaming, SCIM.
const dns = await startDns(t);
const ctx = await buildTestApp(t, { dnsServers: [dns.server] });
const { call, db } = ctx;

t.test('domains_partial_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const domain = uniqueDomain();
  const created = (await call('domains_create', { key: a.key, params: org, body: { domain } })).body;
  const params = { ...org, id: created.id };

  const saml = await call('domains_partial_update', {
    key: a.key,
    params,
    body: {
      saml_entity_id: 'e',
      saml_acs_url: 'https://acs',
      saml_x509_cert: 'cert',
      is_verified: true,
      has_scim: true,
    },
  });
  t.equal(saml.status, 200);
  t.match(
    saml.body,
    { domain, has_saml: true, is_verified: false, saml_x509_cert: 'cert', has_scim: false },
    'read-only fields unchanged',
  );
  t.equal(
    (await call('domains_partial_update', { key: a.key, params, body: { saml_x509_cert: null } })).body.has_saml,
    false,
  );

  for (const [field, value] of [
    ['jit_provisioning_enabled', true],
    ['sso_enforcement', 'saml'],
  ] as const) {
    t.same(
      (await call('domains_partial_update', { key: a.key, params, body: { [field]: value } })).body,
      {
        type: 'validation_error',
        code: 'verification_required',
        detail: 'This attribute cannot be updated until the domain is verified.',
        attr: field,
      },
      `${field} waits for verification`,
    );
  }
  t.match(
    (await call('domains_partial_update', { key: a.key, params, body: { sso_enforcement: 'x'.repeat(29) } })).body,
    {
      code: 'max_length',
      attr: 'sso_enforcement',
    },
  );
  t.match(
    (await call('domains_partial_update', { key: a.key, params, body: { jit_provisioning_enabled: 'yes' } })).body,
    {
      code: 'invalid_input',
      attr: 'jit_provisioning_enabled',
    },
  );

  dns.txt.set(`_posthog-challenge.${domain}`, [created.verification_challenge]);
  t.equal((await call('domains_verify_create', { key: a.key, params })).body.is_verified, true);
  const enabled = await call('domains_partial_update', {
    key: a.key,
    params,
    body: { jit_provisioning_enabled: true, sso_enforcement: 'google-oauth2' },
  });
  t.equal(enabled.status, 200);
  t.match(enabled.body, { jit_provisioning_enabled: true, sso_enforcement: 'google-oauth2', is_verified: true });
  t.equal((await call('domains_retrieve', { key: a.key, params })).body.sso_enforcement, 'google-oauth2', 'stored');

  const member = await makeMember(db, a, 1);
  t.same(
    (await call('domains_partial_update', { key: member.key, params, body: { saml_entity_id: 'x' } })).body,
    levelDenied,
  );
  const theirs = (
    await call('domains_create', {
      key: b.key,
      params: { organization_id: b.organization.id },
      body: { domain: uniqueDomain() },
    })
  ).body;
  t.equal(
    (
      await call('domains_partial_update', {
        key: a.key,
        params: { ...org, id: theirs.id },
        body: { saml_entity_id: 'x' },
      })
    ).status,
    404,
  );
  t.equal(
    (await call('domains_retrieve', { key: b.key, params: { organization_id: b.organization.id, id: theirs.id } })).body
      .saml_entity_id,
    null,
  );
  t.equal((await call('domains_partial_update', { params, body: {} })).status, 401);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.same(
    (await call('domains_partial_update', { key: readOnly, params, body: {} })).body,
    missingScope('organization:write'),
  );
});

t.test('domains_partial_update: renaming and SCIM', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const domain = uniqueDomain();
  const created = (await call('domains_create', { key: a.key, params: org, body: { domain, scim_enabled: true } }))
    .body;
  t.match(
    created,
    { has_scim: false, scim_enabled: false, scim_base_url: null, scim_bearer_token: null },
    'scim_enabled is ignored on create',
  );
  const params = { ...org, id: created.id };
  dns.txt.set(`_posthog-challenge.${domain}`, [created.verification_challenge]);
  await call('domains_verify_create', { key: a.key, params });
  await call('domains_partial_update', {
    key: a.key,
    params,
    body: { jit_provisioning_enabled: true, sso_enforcement: 'google-oauth2' },
  });

  const theirs = (
    await call('domains_create', {
      key: b.key,
      params: { organization_id: b.organization.id },
      body: { domain: uniqueDomain() },
    })
  ).body;
  // PostHog makes `domain` read-only on an existing domain: a name that is taken or malformed is not
  // even checked, the request answers 200 and the name and its verification stay.
  for (const name of [theirs.domain, 'Not A Domain', `${'a'.repeat(200)}.com`]) {
    const res = await call('domains_partial_update', { key: a.key, params, body: { domain: name } });
    t.equal(res.status, 200, name);
    t.match(res.body, { domain, is_verified: true }, `${name} is ignored`);
  }
  t.equal(
    (await call('domains_retrieve', { key: b.key, params: { organization_id: b.organization.id, id: theirs.id } })).body
      .domain,
    theirs.domain,
    'the other organization keeps its name',
  );

  const same = await call('domains_partial_update', { key: a.key, params, body: { domain } });
  t.match(same.body, { domain, is_verified: true, sso_enforcement: 'google-oauth2' }, 'the same name is no rename');

  // PostHog's update() drops `domain`: a new name answers 200 and changes nothing of the name or
  // its verification, while the other fields of the request apply.
  const renamed = uniqueDomain('renamed');
  const res = await call('domains_partial_update', {
    key: a.key,
    params,
    body: { domain: renamed, saml_entity_id: 'entity' },
  });
  t.equal(res.status, 200);
  t.match(
    res.body,
    { domain, is_verified: true, sso_enforcement: 'google-oauth2', saml_entity_id: 'entity' },
    'the name is immutable, the rest applied',
  );
  t.equal(res.body.verification_challenge, created.verification_challenge, 'the challenge is kept');
  t.equal((await call('domains_retrieve', { key: a.key, params })).body.domain, domain);
  const fresh = await call('domains_create', {
    key: b.key,
    params: { organization_id: b.organization.id },
    body: { domain: renamed },
  });
  t.equal(fresh.status, 201, 'the ignored name was never taken');
  t.equal(
    (await call('domains_retrieve', { key: b.key, params: { organization_id: b.organization.id, id: theirs.id } })).body
      .domain,
    theirs.domain,
  );

  t.same((await call('domains_partial_update', { key: a.key, params, body: { scim_enabled: false } })).body, {
    type: 'validation_error',
    code: 'feature_not_available',
    detail: 'SCIM provisioning is not available for this organization.',
    attr: 'scim_enabled',
  });
});

t.test('domains_update', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const created = (await call('domains_create', { key: a.key, params: org, body: { domain: uniqueDomain() } })).body;
  const params = { ...org, id: created.id };
  const next = uniqueDomain('put');
  const res = await call('domains_update', { key: a.key, params, body: { domain: next, saml_entity_id: 'entity' } });
  t.equal(res.status, 200);
  t.match(res.body, { domain: created.domain, saml_entity_id: 'entity' }, 'PUT ignores `domain` as PATCH does');
  const noName = await call('domains_update', { key: a.key, params, body: { saml_entity_id: 'x' } });
  t.equal(noName.status, 200, 'a PUT need not name the read-only domain');
  t.match(noName.body, { domain: created.domain, saml_entity_id: 'x' });

  const member = await makeMember(db, a, 1);
  t.same((await call('domains_update', { key: member.key, params, body: { domain: next } })).body, levelDenied);
  const theirs = (
    await call('domains_create', {
      key: b.key,
      params: { organization_id: b.organization.id },
      body: { domain: uniqueDomain() },
    })
  ).body;
  t.equal(
    (await call('domains_update', { key: a.key, params: { ...org, id: theirs.id }, body: { domain: uniqueDomain() } }))
      .status,
    404,
  );
  t.equal(
    (
      await call('domains_update', {
        key: a.key,
        params: { organization_id: b.organization.id, id: theirs.id },
        body: { domain: uniqueDomain() },
      })
    ).status,
    403,
  );
  t.equal(
    (await call('domains_retrieve', { key: b.key, params: { organization_id: b.organization.id, id: theirs.id } })).body
      .domain,
    theirs.domain,
    'nothing changed',
  );
  t.equal((await call('domains_update', { params, body: { domain: next } })).status, 401);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.same(
    (await call('domains_update', { key: readOnly, params, body: { domain: next } })).body,
    missingScope('organization:write'),
  );
});

t.test('domains_scim_token_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const created = (await call('domains_create', { key: a.key, params: org, body: { domain: uniqueDomain() } })).body;
  const params = { ...org, id: created.id };
  t.same(
    (await call('domains_scim_token_create', { key: a.key, params })).body,
    {
      type: 'authentication_error',
      code: 'permission_denied',
      detail: 'SCIM is not available for this organization',
      attr: null,
    },
    'no SCIM API here, so no token',
  );
  const member = await makeMember(db, a, 1);
  t.same((await call('domains_scim_token_create', { key: member.key, params })).body, levelDenied);
  const theirs = (
    await call('domains_create', {
      key: b.key,
      params: { organization_id: b.organization.id },
      body: { domain: uniqueDomain() },
    })
  ).body;
  t.equal((await call('domains_scim_token_create', { key: a.key, params: { ...org, id: theirs.id } })).status, 404);
  t.equal(
    (
      await call('domains_scim_token_create', {
        key: a.key,
        params: { organization_id: b.organization.id, id: theirs.id },
      })
    ).status,
    403,
  );
  t.equal((await call('domains_scim_token_create', { params })).status, 401);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.same((await call('domains_scim_token_create', { key: readOnly, params })).body, missingScope('organization:write'));
});
