import t from 'tap';
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { event_definitions } from '../../src/db/schema/index.js';
import { makeKey, makeMember, makeTenant, makeUser } from '../helpers/factories.js';
import { capture, definitions } from '../helpers/events.js';
import { ctx, call, db, seeded } from '../helpers/event-definitions-app.js';

t.test('event_definitions_retrieve', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  const params = { project_id: a.project.id, id: id('signed up') };
  const res = await call('event_definitions_retrieve', { key: a.key, params });
  t.match(res, { status: 200, body: { id: id('signed up'), name: 'signed up' } });
  t.equal((await call('event_definitions_retrieve', { key: a.key, params: { ...params, id: 'nope' } })).status, 404);
  t.equal(
    (await call('event_definitions_retrieve', { key: a.key, params: { ...params, id: randomUUID() } })).status,
    404,
  );
  t.equal(
    (
      await call('event_definitions_retrieve', {
        key: b.key,
        params: { project_id: b.project.id, id: id('signed up') },
      })
    ).status,
    404,
  );
  t.equal((await call('event_definitions_retrieve', { key: b.key, params })).status, 403);
  t.equal((await call('event_definitions_retrieve', { params })).status, 401);
  const noScope = await makeKey(db, a.user, ['query:read']);
  t.equal((await call('event_definitions_retrieve', { key: noScope, params })).status, 403);
});

t.test('event_definitions_partial_update', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  const member = await makeMember(db, a, 1, ['event_definition:write']);
  const params = { project_id: a.project.id, id: id('signed up') };
  const patch = (body: unknown, key = a.key) => call('event_definitions_partial_update', { key, params, body });

  const res = await patch({
    description: 'A user signs up',
    tags: ['KPI', ' Growth ', 'growth', ''],
    owner: member.user.id,
    name: 'renamed',
    verified: true,
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    name: 'signed up',
    description: 'A user signs up',
    tags: ['growth', 'kpi'],
    verified: true,
    hidden: false,
  });
  t.match(res.body.owner, { id: member.user.id, email: member.user.email });
  t.match(res.body.verified_by, { id: a.user.id });
  t.match(res.body.updated_by, { id: a.user.id });
  t.match(res.body.verified_at, /^\d{4}-/);

  const byMember = await patch({ hidden: true }, member.key);
  t.match(
    byMember.body,
    { hidden: true, verified: false, verified_at: null, verified_by: null },
    'hiding clears verification',
  );
  t.match(byMember.body.updated_by, { id: member.user.id }, 'any member may edit');
  const verifyAgain = await patch({ verified: true });
  t.match(verifyAgain.body, { hidden: false, verified: true }, 'verifying shows it again');
  const both = await patch({ hidden: true, verified: true });
  t.same(both.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'An event cannot be both hidden and verified',
    attr: null,
  });
  const unverify = await patch({ verified: false, owner: null, description: null, tags: [] });
  t.match(unverify.body, { verified: false, verified_by: null, owner: null, description: null, tags: [] });

  const stranger = await makeUser(db);
  const badOwner = await patch({ owner: stranger.id });
  t.same(badOwner.body, {
    type: 'validation_error',
    code: 'does_not_exist',
    detail: `Invalid pk "${stranger.id}" - object does not exist.`,
    attr: 'owner',
  });
  t.match(await patch({ owner: 'me' }), {
    status: 400,
    body: { attr: 'owner', detail: 'A valid integer is required.' },
  });
  t.match(await patch({ tags: 'growth' }), { status: 400, body: { attr: 'tags', code: 'not_a_list' } });
  t.match(await patch({ verified: 'yes' }), { status: 400, body: { attr: 'verified' } });
  t.match(await patch({ tags: ['x'.repeat(256)] }), { status: 400, body: { attr: 'tags__0' } });

  t.equal((await patch({})).status, 200);
  const readOnly = await makeKey(db, a.user, ['event_definition:read']);
  t.equal((await patch({ description: 'x' }, readOnly)).status, 403);
  t.equal((await patch({ description: 'x' }, b.key)).status, 403);
  t.equal(
    (
      await call('event_definitions_partial_update', {
        key: b.key,
        params: { project_id: b.project.id, id: id('signed up') },
        body: {},
      })
    ).status,
    404,
  );
  t.equal((await call('event_definitions_partial_update', { params, body: {} })).status, 401);
  const stored = (await definitions(db, a.project.id)).find((d) => d.name === 'signed up')!;
  t.equal(stored.description, null, 'refused updates changed nothing');
});

t.test('event_definitions_destroy', async (t) => {
  const { tenant: a, id } = await seeded();
  const b = await makeTenant(db);
  const params = { project_id: a.project.id, id: id('signed up') };
  const readOnly = await makeKey(db, a.user, ['event_definition:read']);
  t.equal((await call('event_definitions_destroy', { key: readOnly, params })).status, 403);
  t.equal((await call('event_definitions_destroy', { key: b.key, params })).status, 403);
  t.equal(
    (await call('event_definitions_destroy', { key: b.key, params: { project_id: b.project.id, id: id('signed up') } }))
      .status,
    404,
  );
  t.equal((await call('event_definitions_destroy', { params })).status, 401);
  const res = await call('event_definitions_destroy', { key: a.key, params });
  t.equal(res.status, 204);
  t.equal(res.raw, '');
  t.equal((await call('event_definitions_retrieve', { key: a.key, params })).status, 404);
  t.equal((await call('event_definitions_destroy', { key: a.key, params })).status, 404);
  await capture(ctx, a.project.api_token, [{ event: 'signed up', distinct_id: 'd' }]);
  const again = (await definitions(db, a.project.id)).find((d) => d.name === 'signed up');
  t.ok(again && again.id !== id('signed up'), 'the next event of that name creates a fresh definition');
});

t.test('event_definitions_update (PUT)', async (t) => {
  const { tenant, id } = await seeded();
  const other = await seeded();
  const params = { project_id: tenant.project.id, id: id('signed up') };
  const first = await call('event_definitions_update', {
    key: tenant.key,
    params,
    body: { description: 'Sign-ups', owner: tenant.user.id },
  });
  t.match(first.body, { description: 'Sign-ups', owner: { id: tenant.user.id } });
  const second = await call('event_definitions_update', { key: tenant.key, params, body: { hidden: true } });
  t.match(
    second.body,
    { description: 'Sign-ups', owner: { id: tenant.user.id }, hidden: true },
    'fields left out keep their values',
  );
  const stranger = await makeUser(db);
  const bad = await call('event_definitions_update', { key: tenant.key, params, body: { owner: stranger.id } });
  t.match(bad.body, { code: 'does_not_exist', attr: 'owner' });
  const cross = await call('event_definitions_update', {
    key: tenant.key,
    params: { project_id: tenant.project.id, id: other.id('signed up') },
    body: { description: 'x' },
  });
  t.equal(cross.status, 404);
  const [row] = await db
    .select()
    .from(event_definitions)
    .where(eq(event_definitions.id, other.id('signed up')));
  t.equal(row!.description, null, 'another project’s definition is unchanged');
  t.equal(
    (
      await call('event_definitions_update', {
        key: tenant.key,
        params: { project_id: other.tenant.project.id, id: other.id('signed up') },
        body: {},
      })
    ).status,
    403,
  );
  t.equal(
    (
      await call('event_definitions_update', {
        key: await makeKey(db, tenant.user, ['event_definition:read']),
        params,
        body: {},
      })
    ).status,
    403,
  );
  t.equal((await call('event_definitions_update', { params, body: {} })).status, 401);
});
