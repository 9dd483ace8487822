import t from 'tap';
import { makeKey, makeProject, makeTenant, makeUser } from '../helpers/factories.js';
import { addMembership } from '../../src/organizations/queries.js';
import { and, eq } from 'drizzle-orm';
import { organization_memberships, users } from '../../src/db/schema/index.js';
import { ctx, call, db, org } from '../helpers/project-settings-app.js';

t.test('change_organization follows PostHog’s rules', async (t) => {
  const a = await makeTenant(db);
  const target = await makeTenant(db);
  const stranger = await makeTenant(db);
  const moving = await makeProject(db, a);
  // The owner of `a` is a member (not admin) of the target first.
  await addMembership(db, target.organization.id, a.user.id, 1);
  const notAdmin = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: target.organization.id },
  });
  t.same(notAdmin.body, {
    type: 'validation_error',
    code: 'invalid_input',
    detail: 'You must be an admin of both the source and target organizations to move a project.',
    attr: null,
  });
  const notMember = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: stranger.organization.id },
  });
  t.equal(notMember.body.detail, 'You must be a member of the target organization to move a project.');
  const same = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: a.organization.id },
  });
  t.equal(same.body.detail, 'Project is already in the target organization.');
  const bad = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: 'nope' },
  });
  t.match(bad.body, { type: 'validation_error', attr: 'organization_id' });
  const foreign = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, stranger.project.id),
    body: { organization_id: target.organization.id },
  });
  t.equal(foreign.status, 404, 'another tenant’s project cannot be moved');

  // Made admin of the target; a user whose current project it is and who is not in the target loses it.
  await db
    .update(organization_memberships)
    .set({ level: 8 })
    .where(
      and(
        eq(organization_memberships.organization_id, target.organization.id),
        eq(organization_memberships.user_id, a.user.id),
      ),
    );
  await ctx.app.authCache.invalidate();
  const bystander = await makeUser(db);
  await addMembership(db, a.organization.id, bystander.id, 1);
  await db
    .update(users)
    .set({ current_team_id: moving.id, current_organization_id: a.organization.id })
    .where(eq(users.id, bystander.id));
  await db.update(users).set({ current_team_id: moving.id }).where(eq(users.id, a.user.id));
  const res = await call('organizations_projects_change_organization_create', {
    key: a.key,
    params: org(a, moving.id),
    body: { organization_id: target.organization.id },
  });
  t.equal(res.status, 200);
  t.equal(res.body.organization, target.organization.id);
  const [owner] = await db.select().from(users).where(eq(users.id, a.user.id));
  t.equal(owner!.current_organization_id, target.organization.id, 'a member of the target follows the project');
  const [left] = await db.select().from(users).where(eq(users.id, bystander.id));
  t.same([left!.current_team_id, left!.current_organization_id], [null, null]);
  t.equal((await call('organizations_projects_retrieve', { key: a.key, params: org(a, moving.id) })).status, 404);
  t.equal((await call('organizations_projects_retrieve', { key: a.key, params: org(target, moving.id) })).status, 200);
  t.equal(
    (
      await call('organizations_projects_change_organization_create', {
        key: await makeKey(db, a.user, ['project:read']),
        params: org(target, moving.id),
        body: { organization_id: a.organization.id },
      })
    ).status,
    403,
  );
});
