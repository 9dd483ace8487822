import t from 'tap';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../src/db/queries/util.js';
import { buildTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';

const dns = await startDns(t);
const ctx = await buildTestApp(t, { dnsServers: [dns.server] });
const { call, db } = ctx;

const levelDenied = {
  type: 'authentication_error',
  code: 'permission_denied',
  detail: 'Your organization access level is insufficient.',
  attr: null,
};
const missingScope = (scope: string) => ({
  type: 'authentication_error',
  code: 'permission_denied',
  detail: `API key missing required scope '${scope}'`,
  attr: null,
});

/**
 * Gives `domain` a linguistic collation where the database has one (PostgreSQL with ICU), so that the
 * byte-order assertion fails unless the query asks for byte order itself.
 */
async function linguisticDomainCollation(): Promise<boolean> {
  try {
    // ICU with punctuation ignored, as linguistic collations such as glibc's en_US do.
    await db.execute(sql`create collation if not exists linguistic (provider = icu, locale = 'und-u-ka-shifted')`);
  } catch {
    return false;
  }
  const probe = rowsOf(
    await db.execute(sql`select x from (values ('a-z.t.io'), ('a.t.io')) v(x) order by x collate linguistic`),
  );
  // A build without ICU may accept the collation and still sort bytewise.
  if (probe[0]?.x !== 'a.t.io') return false;
  await db.execute(sql`alter table organization_domains alter column domain type varchar(128) collate linguistic`);
  return true;
}

let n = 0;
const uniqueDomain = (stem = 'example') => `${stem}-${process.pid}-${++n}.com`;

t.test('domains_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  // Byte order puts "-" (0x2d) before "." (0x2e); a linguistic collation would put a.io first.
  const suffix = `t${process.pid}x${++n}`;
  const domains = [`a.${suffix}.io`, `a-z.${suffix}.io`, `b.${suffix}.com`, `0x.${suffix}.net`];
  for (const domain of domains)
    t.equal((await call('domains_create', { key: a.key, params: org, body: { domain } })).status, 201);
  await call('domains_create', {
    key: b.key,
    params: { organization_id: b.organization.id },
    body: { domain: uniqueDomain('other') },
  });

  if (await linguisticDomainCollation()) {
    const plain = rowsOf(
      await db.execute(
        sql`select domain from organization_domains where organization_id = ${a.organization.id} order by domain`,
      ),
    );
    t.equal(plain[0]?.domain, `0x.${suffix}.net`);
    t.equal(plain[1]?.domain, `a.${suffix}.io`, 'the column’s own collation is not byte order');
  }
  const res = await call('domains_list', { key: a.key, params: org });
  t.equal(res.status, 200);
  t.equal(res.body.count, 4, 'only this organization’s domains');
  t.same(
    res.body.results.map((d: { domain: string }) => d.domain),
    [`0x.${suffix}.net`, `a-z.${suffix}.io`, `a.${suffix}.io`, `b.${suffix}.com`],
    'byte order of domain',
  );
  t.match(res.body.results[0], {
    is_verified: false,
    verified_at: null,
    has_saml: false,
    jit_provisioning_enabled: false,
    sso_enforcement: '',
  });

  const page = await call('domains_list', {
    key: a.key,
    params: { organization_id: '@current' },
    query: { limit: 2, offset: 2 },
  });
  t.same(
    page.body.results.map((d: { domain: string }) => d.domain),
    [`a.${suffix}.io`, `b.${suffix}.com`],
  );
  t.equal(page.body.previous, 'http://localhost/api/organizations/%40current/domains/?limit=2');
  t.equal(page.body.next, null);
  t.match(await call('domains_list', { key: a.key, params: org, query: { offset: 'x' as never } }), {
    status: 400,
    body: { type: 'validation_error', attr: 'offset' },
  });

  const member = await makeMember(db, a, 1);
  t.equal((await call('domains_list', { key: member.key, params: org })).body.count, 4, 'members read');
  const writer = await makeKey(db, a.user, ['organization:write']);
  t.equal((await call('domains_list', { key: writer, params: org })).status, 200, 'write implies read');

  t.equal((await call('domains_list', { params: org })).status, 401);
  const wrongScope = await makeKey(db, a.user, ['organization_member:read']);
  t.same((await call('domains_list', { key: wrongScope, params: org })).body, missingScope('organization:read'));
  const other = await call('domains_list', { key: a.key, params: { organization_id: b.organization.id } });
  t.match(other, {
    status: 403,
    body: { code: 'permission_denied', detail: 'You do not have permission to perform this action.' },
  });
});

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

t.test('domains_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const created = (await call('domains_create', { key: a.key, params: org, body: { domain: uniqueDomain() } })).body;
  const theirs = (
    await call('domains_create', {
      key: b.key,
      params: { organization_id: b.organization.id },
      body: { domain: uniqueDomain() },
    })
  ).body;

  const res = await call('domains_retrieve', { key: a.key, params: { ...org, id: created.id } });
  t.equal(res.status, 200);
  t.same(res.body, created);
  const member = await makeMember(db, a, 1, ['organization:read']);
  t.equal(
    (await call('domains_retrieve', { key: member.key, params: { organization_id: '@current', id: created.id } }))
      .status,
    200,
  );

  const notFound = { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };
  t.same(
    (await call('domains_retrieve', { key: a.key, params: { ...org, id: theirs.id } })).body,
    notFound,
    'another organization’s domain',
  );
  t.same((await call('domains_retrieve', { key: a.key, params: { ...org, id: 'not-a-uuid' } })).body, notFound);
  t.equal(
    (await call('domains_retrieve', { key: a.key, params: { organization_id: b.organization.id, id: theirs.id } }))
      .status,
    403,
  );
  t.equal((await call('domains_retrieve', { params: { ...org, id: created.id } })).status, 401);
  const noScope = await makeKey(db, a.user, ['organization_member:write']);
  t.same(
    (await call('domains_retrieve', { key: noScope, params: { ...org, id: created.id } })).body,
    missingScope('organization:read'),
  );
});

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

t.test('domains_destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const org = { organization_id: a.organization.id };
  const domain = uniqueDomain();
  const created = (await call('domains_create', { key: a.key, params: org, body: { domain } })).body;
  const params = { ...org, id: created.id };

  const member = await makeMember(db, a, 1);
  t.same((await call('domains_destroy', { key: member.key, params })).body, levelDenied);
  const readOnly = await makeKey(db, a.user, ['organization:read']);
  t.same((await call('domains_destroy', { key: readOnly, params })).body, missingScope('organization:write'));
  t.equal((await call('domains_destroy', { params })).status, 401);
  t.equal(
    (await call('domains_destroy', { key: b.key, params: { organization_id: b.organization.id, id: created.id } }))
      .status,
    404,
  );
  t.equal((await call('domains_destroy', { key: b.key, params })).status, 403, 'not a member of the path organization');

  const res = await call('domains_destroy', { key: a.key, params });
  t.equal(res.status, 204);
  t.equal(res.raw, '');
  t.equal((await call('domains_retrieve', { key: a.key, params })).status, 404);
  t.equal((await call('domains_destroy', { key: a.key, params })).status, 404);
  const again = await call('domains_create', {
    key: b.key,
    params: { organization_id: b.organization.id },
    body: { domain },
  });
  t.equal(again.status, 201, 'the name is free for another organization');
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
  t.same(
    (await call('domains_partial_update', { key: a.key, params, body: { domain: theirs.domain } })).body,
    {
      type: 'validation_error',
      code: 'unique',
      detail: 'domain with this domain already exists.',
      attr: 'domain',
    },
    "another organization's name is taken",
  );
  t.match((await call('domains_partial_update', { key: a.key, params, body: { domain: 'Not A Domain' } })).body, {
    code: 'invalid_input',
    detail: 'Please enter a valid domain or subdomain name.',
    attr: 'domain',
  });
  t.equal(
    (await call('domains_retrieve', { key: a.key, params })).body.is_verified,
    true,
    'refused renames change nothing',
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
  t.match((await call('domains_update', { key: a.key, params, body: { saml_entity_id: 'x' } })).body, {
    code: 'required',
    attr: 'domain',
  });

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
