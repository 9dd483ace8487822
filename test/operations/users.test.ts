import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

t.test('users_retrieve', async (t) => {
  const a = await makeTenant(db);
  const res = await call('users_retrieve', { key: a.key });
  t.equal(res.status, 200);
  t.match(res.body, {
    id: a.user.id,
    uuid: a.user.uuid,
    email: a.user.email,
    organization: { id: a.organization.id, membership_level: 15 },
    team: { id: a.project.id },
  });
  t.equal(res.body.organizations.length, 1);
  const scoped = await makeKey(db, a.user, ['user:read'], { scoped_teams: [a.project.id] });
  t.equal((await call('users_retrieve', { key: scoped })).status, 200, '@me is exempt from key scoping');
  t.equal((await call('users_retrieve', { key: await makeKey(db, a.user, ['project:read']) })).status, 403);
  t.equal((await call('users_retrieve')).status, 401);
});
