import t from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/client.js';
import { buildTestApp, json } from '../helpers/app.js';
import { addMembership } from '../../src/organizations/queries.js';
import { makeKey, makeProject, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const denied = (detail: string) => ({ type: 'authentication_error', code: 'permission_denied', detail, attr: null });

t.test('personal_api_keys_create and list', async (t) => {
  const a = await makeTenant(db);
  const res = await call('personal_api_keys_create', {
    key: a.key,
    body: { label: 'CI', scopes: ['dashboard:read', 'organization:write'], scoped_organizations: [a.organization.id] },
  });
  t.equal(res.status, 201);
  t.match(res.body, { label: 'CI', value: /^phx_[0-9A-Za-z]{40,}$/, user_id: a.user.id, last_used_at: null });
  t.equal(res.body.mask_value, `${res.body.value.slice(0, 4)}...${res.body.value.slice(-4)}`);
  const works = await call('organizations_retrieve', { key: res.body.value, params: { id: a.organization.id } });
  t.equal(works.status, 200, 'the new key works at once, and write implies read');
  const list = await call('personal_api_keys_list', { key: a.key });
  t.equal(list.body.length, 2);
  t.equal(list.body[0].id, res.body.id, 'newest first');
  t.ok(
    list.body.every((k: { value: unknown }) => k.value === null),
    'values are never shown again',
  );

  t.test('validation', async (t) => {
    const scope = await call('personal_api_keys_create', {
      key: a.key,
      body: { label: 'x', scopes: ['dashboard:read', 'nope:read'] },
    });
    t.same(scope.body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'Invalid scope: nope:read',
      attr: 'scopes',
    });
    const empty = await call('personal_api_keys_create', { key: a.key, body: { label: 'x', scopes: [] } });
    t.match(empty.body, { attr: 'scopes', code: 'empty' });
    const label = await call('personal_api_keys_create', { key: a.key, body: { scopes: ['*'] } });
    t.match(label.body, { attr: 'label', code: 'required' });
    const other = await makeTenant(db);
    const foreign = await call('personal_api_keys_create', {
      key: a.key,
      body: { label: 'x', scopes: ['*'], scoped_organizations: [other.organization.id] },
    });
    t.match(foreign.body, { attr: 'scoped_organizations', detail: /must be a member/ });
    const foreignTeam = await call('personal_api_keys_create', {
      key: a.key,
      body: { label: 'x', scopes: ['*'], scoped_teams: [other.project.id] },
    });
    t.match(foreignTeam.body, { attr: 'scoped_teams' });
  });

  t.test('a key grants only what it holds', async (t) => {
    const limited = await makeKey(db, a.user, ['personal_api_key:write', 'dashboard:read']);
    const wider = await call('personal_api_keys_create', {
      key: limited,
      body: { label: 'x', scopes: ['dashboard:write'] },
    });
    t.same(wider.body, denied('A key can only create keys that grant no more than it holds itself.'));
    const star = await call('personal_api_keys_create', { key: limited, body: { label: 'x', scopes: ['*'] } });
    t.equal(star.status, 403);
    const ok = await call('personal_api_keys_create', {
      key: limited,
      body: { label: 'x', scopes: ['dashboard:read'] },
    });
    t.same(json<'personal_api_keys_create'>(ok).scopes, ['dashboard:read'], 'a subset of its own scopes is minted');
    const readOnly = await makeKey(db, a.user, ['personal_api_key:read']);
    t.equal(
      (await call('personal_api_keys_create', { key: readOnly, body: { label: 'x', scopes: ['dashboard:read'] } }))
        .status,
      403,
    );
    const scoped = await makeKey(db, a.user, ['*'], { scoped_teams: [a.project.id] });
    const unscoped = await call('personal_api_keys_create', { key: scoped, body: { label: 'x', scopes: ['*'] } });
    t.equal(unscoped.status, 403, 'a key limited to projects cannot create an unlimited one');
  });

  t.test('at most 10 keys', async (t) => {
    const b = await makeTenant(db);
    for (let i = 0; i < 9; i++)
      t.equal(
        (await call('personal_api_keys_create', { key: b.key, body: { label: `k${i}`, scopes: ['*'] } })).status,
        201,
      );
    const eleventh = await call('personal_api_keys_create', { key: b.key, body: { label: 'k10', scopes: ['*'] } });
    t.same(eleventh.body, {
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'You can only have 10 personal API keys. Remove an existing key before creating a new one.',
      attr: null,
    });
  });
});

t.test('personal_api_keys_retrieve, partial_update, roll, destroy', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const created = (
    await call('personal_api_keys_create', { key: a.key, body: { label: 'one', scopes: ['organization:read'] } })
  ).body;
  const got = await call('personal_api_keys_retrieve', { key: a.key, params: { id: created.id } });
  t.match(got.body, { id: created.id, label: 'one', value: null });
  const current = await call('personal_api_keys_retrieve', { key: created.value, params: { id: '@current' } });
  t.equal(current.status, 403, 'reading keys needs personal_api_key:read');
  t.equal(
    (await call('personal_api_keys_retrieve', { key: b.key, params: { id: created.id } })).status,
    404,
    'another user’s key is invisible',
  );

  const patched = await call('personal_api_keys_partial_update', {
    key: a.key,
    params: { id: created.id },
    body: { label: 'renamed', scopes: ['project:read'] },
  });
  t.match(patched.body, { label: 'renamed', scopes: ['project:read'] });
  t.equal(
    (await call('organizations_list', { key: created.value })).status,
    403,
    'narrowed scopes take effect at once',
  );
  t.equal(
    (await call('personal_api_keys_partial_update', { key: b.key, params: { id: created.id }, body: { label: 'x' } }))
      .status,
    404,
  );
  t.match(
    (await call('personal_api_keys_partial_update', { key: a.key, params: { id: created.id }, body: { label: '' } }))
      .body,
    { attr: 'label', code: 'blank' },
  );

  const rolled = await call('personal_api_keys_roll_create', { key: a.key, params: { id: created.id } });
  t.equal(rolled.status, 200);
  t.not(rolled.body.value, created.value);
  t.ok(rolled.body.last_rolled_at);
  t.equal((await call('projects_list', { key: created.value })).status, 401, 'the old value is dead at once');
  t.equal((await call('projects_list', { key: rolled.body.value })).status, 200);

  const narrow = await makeKey(db, a.user, ['personal_api_key:write', 'project:read']);
  const wider = await call('personal_api_keys_roll_create', { key: narrow, params: { id: rolled.body.id } });
  t.equal(wider.status, 200, 'a key may roll a key that grants no more than it holds');
  const star = (await call('personal_api_keys_create', { key: a.key, body: { label: 'star', scopes: ['*'] } })).body;
  const refused = await call('personal_api_keys_roll_create', { key: narrow, params: { id: star.id } });
  t.equal(refused.status, 403, 'but never a more powerful key, whose new value it would learn');
  t.equal((await call('projects_list', { key: star.value })).status, 200, 'and the refused roll changed nothing');
  rolled.body.value = wider.body.value;
  t.equal((await call('personal_api_keys_destroy', { key: b.key, params: { id: created.id } })).status, 404);
  t.equal((await call('personal_api_keys_destroy', { key: a.key, params: { id: created.id } })).status, 204);
  t.equal((await call('projects_list', { key: rolled.body.value })).status, 401, 'a deleted key is dead at once');
  t.equal((await call('personal_api_keys_destroy', { key: a.key, params: { id: created.id } })).status, 404);
  t.equal((await call('personal_api_keys_list')).status, 401);
});

t.test('a key manages only keys within its own grants', async (t) => {
  const a = await makeTenant(db);
  const p2 = await makeProject(db, a);
  const other = await makeTenant(db);
  await addMembership(db, other.organization.id, a.user.id, 1);
  // Everything about the user's keys except when they were last used.
  const keys = async () =>
    ((await call('personal_api_keys_list', { key: a.key })).body as Record<string, unknown>[]).map(
      ({ last_used_at: _, ...rest }) => rest,
    );
  const create = async (label: string, scopes: string[], scoping: Record<string, unknown> = {}) =>
    (await call('personal_api_keys_create', { key: a.key, body: { label, scopes, ...scoping } })).body;

  t.test('a key holding personal_api_key:write and little else', async (t) => {
    const weak = await makeKey(db, a.user, ['personal_api_key:write', 'dashboard:read']);
    const star = await create('everything', ['*']);
    const teamOnly = await create('one project', ['dashboard:write'], { scoped_teams: [a.project.id] });
    const before = await keys();

    const widen = await call('personal_api_keys_partial_update', {
      key: weak,
      params: { id: teamOnly.id },
      body: { scoped_teams: [] },
    });
    t.same(
      widen.body,
      denied('A key can only change keys that grant no more than it holds itself.'),
      'it could otherwise lift a key’s project limit',
    );
    t.equal(widen.status, 403);
    const fewerScopes = await call('personal_api_keys_partial_update', {
      key: weak,
      params: { id: teamOnly.id },
      body: { scopes: ['dashboard:read'] },
    });
    t.equal(fewerScopes.status, 403, 'or narrow a key it does not cover');
    for (const body of [{ label: 'mine now' }, { scopes: ['dashboard:read'] }, { scoped_teams: [a.project.id] }]) {
      const res = await call('personal_api_keys_partial_update', { key: weak, params: { id: star.id }, body });
      t.same(
        res.body,
        denied('A key can only change keys that grant no more than it holds itself.'),
        `PATCH ${Object.keys(body)[0]} of the * key`,
      );
    }
    const roll = await call('personal_api_keys_roll_create', { key: weak, params: { id: star.id } });
    t.same(roll.body, denied('A key can only roll keys that grant no more than it holds itself.'));
    const del = await call('personal_api_keys_destroy', { key: weak, params: { id: star.id } });
    t.same(del.body, denied('A key can only delete keys that grant no more than it holds itself.'));
    t.equal(del.status, 403);
    t.same(await keys(), before, 'nothing changed');
    t.equal(
      (await call('projects_list', { key: star.value })).status,
      200,
      'the * key still works, with its old value',
    );

    const covered = await create('covered', ['dashboard:read'], { scoped_teams: [a.project.id] });
    const renamed = await call('personal_api_keys_partial_update', {
      key: weak,
      params: { id: covered.id },
      body: { label: 'renamed' },
    });
    t.equal(renamed.status, 200, 'a key within its grants may be changed');
    const raised = await call('personal_api_keys_partial_update', {
      key: weak,
      params: { id: covered.id },
      body: { scopes: ['dashboard:write'] },
    });
    t.same(raised.body, denied('A key cannot make a key grant more than it holds itself.'), 'but not beyond them');
    const self = await call('personal_api_keys_partial_update', {
      key: weak,
      params: { id: '@current' },
      body: { scopes: ['*'] },
    });
    t.equal(self.status, 403, 'nor can a key widen itself');
    t.equal((await call('personal_api_keys_destroy', { key: weak, params: { id: covered.id } })).status, 204);
  });

  t.test('project and organization limits', async (t) => {
    const inTeam = await makeKey(db, a.user, ['*'], { scoped_teams: [a.project.id] });
    const unlimited = await create('unlimited', ['dashboard:read']);
    const sameTeam = await create('same project', ['dashboard:read'], { scoped_teams: [a.project.id] });
    for (const id of [unlimited.id]) {
      t.equal(
        (await call('personal_api_keys_partial_update', { key: inTeam, params: { id }, body: { label: 'x' } })).status,
        403,
        'an unlimited key is out of reach',
      );
      t.equal((await call('personal_api_keys_roll_create', { key: inTeam, params: { id } })).status, 403);
      t.equal((await call('personal_api_keys_destroy', { key: inTeam, params: { id } })).status, 403);
    }
    for (const scoped_teams of [null, [], [p2.id], [a.project.id, p2.id]]) {
      const res = await call('personal_api_keys_partial_update', {
        key: inTeam,
        params: { id: sameTeam.id },
        body: { scoped_teams },
      });
      t.equal(res.status, 403, `scoped_teams ${JSON.stringify(scoped_teams)}`);
    }
    const byOrg = await call('personal_api_keys_create', {
      key: inTeam,
      body: { label: 'x', scopes: ['*'], scoped_organizations: [a.organization.id] },
    });
    t.equal(byOrg.status, 403, 'a whole organization is more than one of its projects');
    t.equal(
      (await call('personal_api_keys_roll_create', { key: inTeam, params: { id: sameTeam.id } })).status,
      200,
      'a key in the same project is within reach',
    );

    const inOrg = await makeKey(db, a.user, ['*'], { scoped_organizations: [a.organization.id] });
    const projectOfOrg = await call('personal_api_keys_create', {
      key: inOrg,
      body: { label: 'x', scopes: ['dashboard:read'], scoped_teams: [p2.id] },
    });
    t.equal(projectOfOrg.status, 201, 'a project of the organization is within it');
    const otherOrg = await call('personal_api_keys_create', {
      key: inOrg,
      body: { label: 'x', scopes: ['*'], scoped_organizations: [other.organization.id] },
    });
    t.equal(otherOrg.status, 403);
    const projectElsewhere = await call('personal_api_keys_create', {
      key: inOrg,
      body: { label: 'x', scopes: ['*'], scoped_teams: [other.project.id] },
    });
    t.equal(projectElsewhere.status, 403);
    const moved = await call('personal_api_keys_partial_update', {
      key: inOrg,
      params: { id: projectOfOrg.body.id },
      body: { scoped_organizations: [other.organization.id], scoped_teams: [] },
    });
    t.equal(moved.status, 403);
    t.equal((await call('personal_api_keys_destroy', { key: inOrg, params: { id: unlimited.id } })).status, 403);
    t.equal(
      (await call('personal_api_keys_destroy', { key: inOrg, params: { id: projectOfOrg.body.id } })).status,
      204,
    );
  });

  t.test('write covers read; only * covers *', async (t) => {
    const fresh = await makeTenant(db);
    const writer = await makeKey(db, fresh.user, ['personal_api_key:write', 'dashboard:write']);
    t.equal(
      (await call('personal_api_keys_create', { key: writer, body: { label: 'r', scopes: ['dashboard:read'] } }))
        .status,
      201,
    );
    t.equal(
      (
        await call('personal_api_keys_create', {
          key: writer,
          body: { label: 'w', scopes: ['dashboard:write', 'personal_api_key:read'] },
        })
      ).status,
      201,
    );
    t.equal(
      (await call('personal_api_keys_create', { key: writer, body: { label: 'o', scopes: ['organization:read'] } }))
        .status,
      403,
    );
  });
});

t.test('revocation reaches every process at once', async (t) => {
  const database = await openDatabase({ url: ctx.url, poolSize: 2 });
  const other = await buildApp({ config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }), database });
  t.teardown(async () => {
    await other.close();
    await database.close();
  });
  const a = await makeTenant(db);
  const key = (await call('personal_api_keys_create', { key: a.key, body: { label: 'x', scopes: ['*'] } })).body;
  const ask = () => other.inject({ url: '/api/projects/', headers: { authorization: `Bearer ${key.value}` } });
  t.equal((await ask()).statusCode, 200, 'warm in the other process');
  await call('personal_api_keys_destroy', { key: a.key, params: { id: key.id } });
  let status = 200;
  for (let i = 0; i < 50 && status === 200; i++) {
    await new Promise((r) => setTimeout(r, 20));
    status = (await ask()).statusCode;
  }
  t.equal(status, 401, 'the other process refuses the deleted key within a second');
});
