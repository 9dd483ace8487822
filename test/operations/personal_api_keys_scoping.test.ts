// `scoped_teams` and `scoped_organizations` are lists in every answer, whoever made the key and
// however: PostHog's clients (@posthog/agent-toolkit among them) validate them as arrays and give up
// on a null.
import t from 'tap';
import { commands } from '../../src/cli/commands.js';
import { buildTestApp } from '../helpers/app.js';
import { makeInvite, makeKey, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

t.test('a key created without scoping reads back with empty lists everywhere', async (t) => {
  const a = await makeTenant(db);
  const created = await call('personal_api_keys_create', {
    key: a.key,
    body: { label: 'plain', scopes: ['project:read', 'personal_api_key:read'] },
  });
  t.equal(created.status, 201);
  t.same([created.body.scoped_teams, created.body.scoped_organizations], [[], []]);
  const explicitNull = await call('personal_api_keys_create', {
    key: a.key,
    body: { label: 'nulls', scopes: ['project:read'], scoped_teams: null, scoped_organizations: null },
  });
  t.same(
    [explicitNull.body.scoped_teams, explicitNull.body.scoped_organizations],
    [[], []],
    'null is stored as the empty list',
  );

  const current = await call('personal_api_keys_retrieve', { key: created.body.value, params: { id: '@current' } });
  t.same([current.body.scoped_teams, current.body.scoped_organizations], [[], []], 'what agent-toolkit reads first');
  const listed = await call('personal_api_keys_list', { key: a.key });
  for (const k of listed.body) t.ok(Array.isArray(k.scoped_teams) && Array.isArray(k.scoped_organizations), k.label);

  const scoped = await call('personal_api_keys_partial_update', {
    key: a.key,
    params: { id: created.body.id },
    body: { scoped_teams: [a.project.id] },
  });
  t.same(scoped.body.scoped_teams, [a.project.id]);
  const cleared = await call('personal_api_keys_partial_update', {
    key: a.key,
    params: { id: created.body.id },
    body: { scoped_teams: null },
  });
  t.same(cleared.body.scoped_teams, [], 'clearing with null gives the empty list');
  const works = await call('projects_list', { key: created.body.value });
  t.equal(works.status, 200, 'and the key is unrestricted again');
  const bad = await call('personal_api_keys_partial_update', {
    key: a.key,
    params: { id: created.body.id },
    body: { scoped_teams: ['x'] },
  });
  t.match(bad.body, { type: 'validation_error', attr: 'scoped_teams__0' });
});

t.test('keys made by the command-line tool and by invite sign-up are lists too', async (t) => {
  const a = await makeTenant(db);
  const cli = (await commands['create-key']!.run(
    db,
    { email: a.user.email, scopes: 'project:read,personal_api_key:read' },
    ctx.database,
  )) as Record<string, unknown>;
  t.same([cli.scoped_teams, cli.scoped_organizations], [[], []]);
  const read = await call('personal_api_keys_retrieve', { key: cli.value as string, params: { id: '@current' } });
  t.same([read.body.scoped_teams, read.body.scoped_organizations], [[], []]);

  const invite = await makeInvite(db, a);
  const signup = await call('signup_create', { params: { invite_id: invite.id }, body: {} });
  t.equal(signup.status, 201);
  t.same(signup.body.personal_api_key.scoped_organizations, []);
  const own = await call('personal_api_keys_retrieve', {
    key: signup.body.personal_api_key.value,
    params: { id: '@current' },
  });
  t.same([own.body.scoped_teams, own.body.scoped_organizations], [[], []]);
});

t.test('an empty scoping list restricts nothing', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const key = await makeKey(db, a.user, ['project:read'], { scoped_teams: [], scoped_organizations: [] });
  t.equal((await call('projects_retrieve', { key, params: { id: a.project.id } })).status, 200);
  t.equal(
    (await call('organizations_projects_list', { key, params: { organization_id: a.organization.id } })).status,
    200,
  );
  t.equal(
    (await call('projects_retrieve', { key, params: { id: b.project.id } })).status,
    404,
    'yet tenancy still holds',
  );
});
