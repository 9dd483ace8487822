import t from 'tap';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../src/db/queries/util.js';
import { buildTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns.js';
import { levelDenied, missingScope, uniqueDomain } from '../helpers/domains.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';

// Listing, reading and deleting domains.
const dns = await startDns(t);
const ctx = await buildTestApp(t, { dnsServers: [dns.server] });
const { call, db } = ctx;

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
