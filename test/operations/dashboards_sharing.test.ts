import { eq } from 'drizzle-orm';
import t from 'tap';
import { organizations, share_passwords } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant, type Tenant } from '../helpers/factories.js';

// What PostHog's current sharing configuration adds: display settings, password protection with its
// passwords, and the organization's switch for publicly shared resources.
const ctx = await buildTestApp(t);
const { call, db } = ctx;

const invalid = (attr: string | null, detail: string) => ({
  type: 'validation_error',
  code: 'invalid_input',
  detail,
  attr,
});
const NO_EDIT = "You don't have edit permissions for this dashboard.";

async function dashboard(tenant: Tenant, body: Record<string, unknown> = {}) {
  const res = await call('dashboards_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { name: 'Shared', ...body },
  });
  if (res.status !== 201) throw new Error(`could not create a dashboard: ${res.raw}`);
  return res.body;
}

function sharingOf(tenant: Tenant, id: number) {
  const params = { project_id: tenant.project.id, dashboard_id: id };
  return {
    get: (key = tenant.key) => call('dashboards_sharing_list', { key, params }),
    save: (body: unknown, key = tenant.key) => call('dashboards_sharing_partial_update', { key, params, body }),
    refresh: (key = tenant.key) => call('dashboards_sharing_refresh_create', { key, params }),
    addPassword: (body: unknown = {}, key = tenant.key) =>
      call('dashboards_sharing_passwords_create', { key, params, body }),
    removePassword: (passwordId: string | number, key = tenant.key) =>
      call('dashboards_sharing_passwords_destroy', { key, params: { ...params, password_id: passwordId } }),
  };
}

const open = (token: string) => call('shared_dashboard_retrieve', { params: { access_token: token } });

t.test('settings and password_required', async (t) => {
  const a = await makeTenant(db);
  const d = await dashboard(a);
  const s = sharingOf(a, d.id);

  t.match((await s.get()).body, { settings: null, password_required: false, share_passwords: [] }, 'unsaved defaults');
  const saved = await s.save({
    enabled: true,
    settings: { whitelabel: true, legend: false, noHeader: null, unknown: 1 },
  });
  t.equal(saved.status, 200);
  t.same(saved.body.settings, { whitelabel: true, legend: false }, 'unknown keys and nulls are dropped');
  t.same((await s.get()).body.settings, { whitelabel: true, legend: false }, 'stored');
  t.same((await s.save({ settings: null })).body.settings, null, 'null clears them');

  t.same((await s.save({ settings: { legend: 'yes' } })).body, invalid('settings', 'Invalid settings format'));
  t.same((await s.save({ settings: 'dark' })).body, invalid('settings', 'Invalid settings format'));
  t.match((await s.save({ password_required: 'on' })).body, { attr: 'password_required', code: 'invalid_input' });

  const token = saved.body.access_token;
  t.equal((await open(token)).status, 200);
  const locked = await s.save({ password_required: true });
  t.match(locked.body, { password_required: true, enabled: true, access_token: token });
  const refused = await open(token);
  t.equal(refused.status, 401, 'a password-protected share is not served to the public');
  t.notOk(JSON.stringify(refused.body).includes('Shared'), 'nothing of the dashboard leaks');
  await s.save({ password_required: false });
  t.equal((await open(token)).status, 200);
});

t.test('dashboards_sharing_passwords_create and _destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const d = await dashboard(a);
  const s = sharingOf(a, d.id);

  t.same(
    (await s.addPassword({ raw_password: 'correct horse' })).body,
    invalid(null, 'Password protection must be enabled before creating passwords'),
  );
  await s.save({ enabled: true, password_required: true });

  const chosen = await s.addPassword({ raw_password: 'correct horse', note: 'for the board' });
  t.equal(chosen.status, 201);
  t.match(chosen.body, {
    id: Number,
    password: 'correct horse',
    note: 'for the board',
    created_by_email: a.user.email,
    created_at: /^\d{4}-/,
  });
  const generated = await s.addPassword();
  t.equal(generated.status, 201);
  t.match(generated.body, { password: /^[0-9A-Za-z]{16,}$/, note: '' }, 'a random password when none is given');

  const [stored] = await db.select().from(share_passwords).where(eq(share_passwords.id, chosen.body.id));
  t.match(stored!.password_hash, /^scrypt\$/, 'only a hash is stored');
  t.notOk(stored!.password_hash.includes('correct horse'));

  const listed = (await s.get()).body.share_passwords;
  t.same(
    listed.map((p: any) => Object.keys(p).sort()),
    [
      ['created_at', 'created_by_email', 'id', 'is_active', 'note'],
      ['created_at', 'created_by_email', 'id', 'is_active', 'note'],
    ],
    'listed without their values',
  );
  t.match(listed, [{ id: chosen.body.id, note: 'for the board', is_active: true }, { id: generated.body.id }]);

  t.same(
    (await s.addPassword({ raw_password: 'short' })).body,
    invalid('raw_password', 'Password must be at least 8 characters long.'),
  );
  t.match((await s.addPassword({ note: 'n'.repeat(101) })).body, { attr: 'note', code: 'max_length' });
  t.equal((await s.get()).body.share_passwords.length, 2, 'refused passwords are not stored');

  t.equal((await s.removePassword(generated.body.id)).status, 204);
  t.same(
    (await s.get()).body.share_passwords.map((p: any) => p.id),
    [chosen.body.id],
    'removed from the list',
  );
  const notFound = { type: 'invalid_request', code: 'not_found', detail: 'Password not found', attr: null };
  t.same((await s.removePassword(generated.body.id)).body, notFound, 'only once');
  t.same((await s.removePassword('abc')).body, notFound);

  t.test('tenants and rights', async (t) => {
    const theirs = await dashboard(b);
    const ts = sharingOf(b, theirs.id);
    await ts.save({ password_required: true });
    const theirPassword = (await ts.addPassword({ raw_password: 'their secret' })).body;
    const mineOnTheirs = sharingOf(a, theirs.id);
    t.equal(
      (await mineOnTheirs.addPassword({ raw_password: 'intruder!' })).status,
      404,
      "another tenant's dashboard on my path",
    );
    t.equal((await mineOnTheirs.removePassword(theirPassword.id)).status, 404);
    t.equal((await s.removePassword(theirPassword.id)).status, 404, "another dashboard's password on mine");
    t.equal((await ts.get()).body.share_passwords.length, 1, 'theirs is untouched');
    t.equal((await s.addPassword({}, b.key)).status, 403, "another organization's project");

    const member = await makeMember(db, a, 1);
    const locked = await dashboard(a, { restriction_level: 37 });
    await sharingOf(a, locked.id).save({ password_required: true });
    t.match((await sharingOf(a, locked.id).addPassword({}, member.key)).body, {
      code: 'permission_denied',
      detail: NO_EDIT,
    });
    const reader = await makeKey(db, a.user, ['sharing_configuration:read']);
    t.equal((await s.addPassword({}, reader)).status, 403);
    t.equal((await s.removePassword(chosen.body.id, reader)).status, 403);
    t.equal((await s.addPassword({}, '')).status, 401);
    t.equal((await s.removePassword(chosen.body.id, '')).status, 401);
    t.equal((await s.get()).body.share_passwords.length, 1, 'nothing changed');
  });
});

t.test('opening a password-protected share', async (t) => {
  const a = await makeTenant(db);
  const d = await dashboard(a);
  const s = sharingOf(a, d.id);
  const token = (await s.save({ enabled: true, password_required: true })).body.access_token;
  const password = (await s.addPassword({ raw_password: 'open sesame' })).body;
  const unlock = (body: unknown, at = token) => call('shared_dashboard_create', { params: { access_token: at }, body });
  const read = (shareToken?: string, at = token) =>
    call('shared_dashboard_retrieve', {
      params: { access_token: at },
      headers: shareToken ? { authorization: `Bearer ${shareToken}` } : {},
    });

  t.match((await read()).body, { type: 'authentication_error', code: 'not_authenticated' });
  const wrong = await unlock({ password: 'open barley' });
  t.same(wrong.body, {
    type: 'authentication_error',
    code: 'authentication_failed',
    detail: 'Incorrect password',
    attr: null,
  });
  t.equal(wrong.status, 401);
  t.equal((await unlock({})).status, 401, 'no password');
  t.match((await unlock({ password: 3 })).body, { type: 'validation_error', attr: 'password' });

  const opened = await unlock({ password: 'open sesame' });
  t.equal(opened.status, 200);
  t.match(opened.body, { shareToken: String });
  const shareToken = opened.body.shareToken;
  const shared = await read(shareToken);
  t.equal(shared.status, 200, 'the share token opens the share');
  t.match(shared.body, { id: d.id, name: 'Shared', effective_privilege_level: 21 });
  const exported = await call('shared_json_retrieve', {
    params: { access_token: token },
    headers: { authorization: `Bearer ${shareToken}` },
  });
  t.match(exported.body, { type: 'scene', accessToken: token, dashboard: { id: d.id } }, 'and its .json form');
  t.equal((await call('shared_json_retrieve', { params: { access_token: token } })).status, 401);
  t.match((await read('garbage')).body, { code: 'authentication_failed' });
  t.match(
    (await read(`${shareToken.slice(0, -4)}AAAA`)).body,
    { code: 'authentication_failed' },
    'a tampered token fails',
  );

  const other = await dashboard(a);
  const os = sharingOf(a, other.id);
  const otherToken = (await os.save({ enabled: true, password_required: true })).body.access_token;
  t.equal((await read(shareToken, otherToken)).status, 401, "one share's token does not open another");

  await s.removePassword(password.id);
  t.equal((await read(shareToken)).status, 401, 'removing the password ends its tokens');
  t.equal((await unlock({ password: 'open sesame' })).status, 401, 'and the password no longer opens');

  await s.addPassword({ raw_password: 'second password' });
  const again = (await unlock({ password: 'second password' })).body.shareToken;
  t.equal((await read(again)).status, 200);
  const rotated = (await s.refresh()).body.access_token;
  t.equal((await read(again, rotated)).status, 401, 'rotating the share ends its tokens');
  t.equal((await unlock({ password: 'x' }, 'no-such-share')).status, 404);

  await s.save({ password_required: false });
  const plain = await unlock({}, rotated);
  t.match(plain.body, { id: d.id }, 'a share without password protection answers the dashboard');
});

t.test("the organization's allow_publicly_shared_resources", async (t) => {
  const a = await makeTenant(db);
  const d = await dashboard(a);
  const s = sharingOf(a, d.id);
  const token = (await s.save({ enabled: true })).body.access_token;
  const allow = (value: boolean) =>
    db
      .update(organizations)
      .set({ allow_publicly_shared_resources: value })
      .where(eq(organizations.id, a.organization.id));

  await allow(false);
  t.same((await s.save({ enabled: true })).body, {
    type: 'authentication_error',
    code: 'permission_denied',
    detail: 'Public sharing is disabled for this organization.',
    attr: null,
  });
  t.equal((await open(token)).status, 404, 'existing shares stop being served');
  t.match((await s.save({ enabled: false })).body, { enabled: false }, 'disabling is still allowed');
  t.match((await s.save({ settings: { legend: true } })).body, { settings: { legend: true } }, 'and other changes');
  t.equal((await s.save({ enabled: true })).status, 403);
  t.match((await s.get()).body, { enabled: false }, 'nothing was enabled');

  await allow(true);
  t.equal((await s.save({ enabled: true })).status, 200);
  t.equal((await open(token)).status, 200);
});

t.test('password attempts are throttled per share and address while throttling is on', async (t) => {
  const throttled = await buildTestApp(t, { rateLimits: true });
  const a = await makeTenant(throttled.db);
  const params = { project_id: a.project.id, dashboard_id: 0 };
  const created = await throttled.call('dashboards_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: {},
  });
  params.dashboard_id = created.body.id;
  const token = (
    await throttled.call('dashboards_sharing_partial_update', {
      key: a.key,
      params,
      body: { enabled: true, password_required: true },
    })
  ).body.access_token;
  await throttled.call('dashboards_sharing_passwords_create', {
    key: a.key,
    params,
    body: { raw_password: 'the real one' },
  });
  const attempt = (password: string) =>
    throttled.call('shared_dashboard_create', { params: { access_token: token }, body: { password } });
  const statuses = [];
  for (let i = 0; i < 20; i++) statuses.push((await attempt(`guess ${i}`)).status);
  t.same(new Set(statuses), new Set([401]), 'twenty wrong guesses are answered');
  const blocked = await attempt('the real one');
  t.equal(blocked.status, 429, 'then even the right password waits');
  t.match(blocked.headers['retry-after'], /^\d+$/);
});
