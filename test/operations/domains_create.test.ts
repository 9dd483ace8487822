import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns.js';
import { levelDenied, missingScope, uniqueDomain } from '../helpers/domains.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';

// Adding and verifying domains.
const dns = await startDns(t);
const ctx = await buildTestApp(t, { dnsServers: [dns.server] });
const { call, db } = ctx;

t.test('domains_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const domain = uniqueDomain('acme');
  const res = await call('domains_create', {
    key: a.key,
    params: org,
    body: {
      domain,
      // Read-only, and the two settings that wait for verification: all ignored.
      is_verified: true,
      verified_at: '2020-01-01T00:00:00Z',
      verification_challenge: 'mine',
      has_saml: false,
      jit_provisioning_enabled: true,
      sso_enforcement: 'google-oauth2',
      saml_entity_id: 'https://idp.example.com/entity',
      saml_acs_url: 'https://idp.example.com/acs',
      saml_x509_cert: 'MIIC...',
    },
  });
  t.equal(res.status, 201);
  t.match(res.body, {
    domain,
    is_verified: false,
    verified_at: null,
    jit_provisioning_enabled: false,
    sso_enforcement: '',
    has_saml: true,
    saml_entity_id: 'https://idp.example.com/entity',
  });
  t.match(res.body.verification_challenge, /^[A-Za-z0-9_-]{43}$/, '43 URL-safe characters');
  const second = await call('domains_create', { key: a.key, params: org, body: { domain: uniqueDomain('acme') } });
  t.not(second.body.verification_challenge, res.body.verification_challenge, 'each domain gets its own challenge');
  t.equal(second.body.has_saml, false);

  t.test('unique across organizations', async (t) => {
    const taken = {
      type: 'validation_error',
      code: 'unique',
      detail: 'domain with this domain already exists.',
      attr: 'domain',
    };
    t.same((await call('domains_create', { key: a.key, params: org, body: { domain } })).body, taken);
    const elsewhere = await call('domains_create', {
      key: b.key,
      params: { organization_id: b.organization.id },
      body: { domain },
    });
    t.equal(elsewhere.status, 400);
    t.same(elsewhere.body, taken);
  });

  t.test('validation', async (t) => {
    const invalid = {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'Please enter a valid domain or subdomain name.',
      attr: 'domain',
    };
    for (const bad of [
      'Example.com',
      'no-tld',
      'https://example.com',
      '-x.com',
      'x-.com',
      'a..com',
      'example.c0m',
      'exa mple.com',
    ]) {
      t.same((await call('domains_create', { key: a.key, params: org, body: { domain: bad } })).body, invalid, bad);
    }
    t.same((await call('domains_create', { key: a.key, params: org, body: {} })).body, {
      type: 'validation_error',
      code: 'required',
      detail: 'This field is required.',
      attr: 'domain',
    });
    t.match(
      (await call('domains_create', { key: a.key, params: org, body: { domain: `${'a'.repeat(130)}.com` } })).body,
      {
        code: 'max_length',
        attr: 'domain',
      },
    );
    t.match((await call('domains_create', { key: a.key, params: org, body: { domain: 42 } })).body, { attr: 'domain' });
    t.match(
      (await call('domains_create', { key: a.key, params: org, body: { domain: uniqueDomain(), saml_acs_url: 7 } }))
        .body,
      { code: 'invalid_input', attr: 'saml_acs_url', detail: 'Not a valid string.' },
    );
    t.equal(
      (await call('domains_list', { key: a.key, params: org })).body.count,
      2,
      'nothing was created by the refusals',
    );
  });

  t.test('access', async (t) => {
    const body = { domain: uniqueDomain() };
    t.equal((await call('domains_create', { params: org, body })).status, 401);
    const member = await makeMember(db, a, 1);
    t.same((await call('domains_create', { key: member.key, params: org, body })).body, levelDenied);
    const admin = await makeMember(db, a, 8);
    t.equal((await call('domains_create', { key: admin.key, params: org, body })).status, 201, 'administrators may');
    const readOnly = await makeKey(db, a.user, ['organization:read', 'organization_member:write']);
    t.same(
      (await call('domains_create', { key: readOnly, params: org, body: { domain: uniqueDomain() } })).body,
      missingScope('organization:write'),
    );
    const other = await call('domains_create', {
      key: a.key,
      params: { organization_id: b.organization.id },
      body: { domain: uniqueDomain() },
    });
    t.equal(other.status, 403);
    const scoped = await makeKey(db, a.user, ['*'], { scoped_organizations: [b.organization.id] });
    t.equal((await call('domains_create', { key: scoped, params: org, body: { domain: uniqueDomain() } })).status, 403);
  });
});

t.test('domains_verify_create', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const create = async (domain = uniqueDomain('verify')) =>
    (await call('domains_create', { key: a.key, params: org, body: { domain } })).body;

  t.test('no record, an empty answer, a wrong record: stays unverified', async (t) => {
    const d = await create();
    const params = { ...org, id: d.id };
    const none = await call('domains_verify_create', { key: a.key, params });
    t.equal(none.status, 200);
    t.match(none.body, { id: d.id, is_verified: false, verified_at: null });
    t.ok(dns.queries.includes(`_posthog-challenge.${d.domain}`), 'the TXT record was looked up');
    dns.txt.set(`_posthog-challenge.${d.domain}`, []);
    t.equal((await call('domains_verify_create', { key: a.key, params })).body.is_verified, false);
    dns.txt.set(`_posthog-challenge.${d.domain}`, ['not-the-challenge', `${d.verification_challenge}x`]);
    t.equal((await call('domains_verify_create', { key: a.key, params })).body.is_verified, false);
    dns.txt.set(d.domain, [d.verification_challenge]);
    t.equal(
      (await call('domains_verify_create', { key: a.key, params })).body.is_verified,
      false,
      'only _posthog-challenge counts',
    );
  });

  t.test('a matching record verifies, once', async (t) => {
    const d = await create();
    const params = { ...org, id: d.id };
    dns.txt.set(`_posthog-challenge.${d.domain}`, ['v=spf1 -all', d.verification_challenge]);
    const before = Date.now();
    const res = await call('domains_verify_create', { key: a.key, params });
    t.equal(res.status, 200);
    t.equal(res.body.is_verified, true);
    t.ok(Date.parse(res.body.verified_at) >= before - 1000, 'verified_at is now');
    t.equal((await call('domains_retrieve', { key: a.key, params })).body.is_verified, true, 'stored');
    t.same((await call('domains_verify_create', { key: a.key, params })).body, {
      type: 'validation_error',
      code: 'already_verified',
      detail: 'This domain has already been verified.',
      attr: null,
    });
  });

  t.test('a challenge split into several TXT strings', async (t) => {
    const d = await create();
    const value = d.verification_challenge as string;
    // One record made of two strings is read back joined.
    dns.txt.set(`_posthog-challenge.${d.domain}`, [[value.slice(0, 20), value.slice(20)]]);
    t.equal((await call('domains_verify_create', { key: a.key, params: { ...org, id: d.id } })).body.is_verified, true);
  });

  t.test('an unreachable resolver counts as unverified', async (t) => {
    const dead = await buildTestApp(t, { dnsServers: ['127.0.0.1:9'] });
    const tenant = await makeTenant(dead.db);
    const o = { organization_id: tenant.organization.id };
    const d = (await dead.call('domains_create', { key: tenant.key, params: o, body: { domain: uniqueDomain() } }))
      .body;
    const res = await dead.call('domains_verify_create', { key: tenant.key, params: { ...o, id: d.id } });
    t.equal(res.status, 200);
    t.equal(res.body.is_verified, false);
  });

  t.test('access', async (t) => {
    const d = await create();
    const params = { ...org, id: d.id };
    const member = await makeMember(db, a, 1);
    t.same((await call('domains_verify_create', { key: member.key, params })).body, levelDenied);
    const readOnly = await makeKey(db, a.user, ['organization:read']);
    t.same((await call('domains_verify_create', { key: readOnly, params })).body, missingScope('organization:write'));
    t.equal((await call('domains_verify_create', { params })).status, 401);
    t.equal(
      (await call('domains_verify_create', { key: b.key, params: { organization_id: b.organization.id, id: d.id } }))
        .status,
      404,
    );
    t.equal((await call('domains_verify_create', { key: a.key, params: { ...org, id: 'nope' } })).status, 404);
  });
});
