// The tenant matrix: every operation that names an organization or a project (or is one) refuses
// callers from outside it. Operations are enumerated from the contract, so every area is covered.
import t from 'tap';
import { addMembership } from '../src/organizations/queries.js';
import { buildTestApp } from './helpers/app.js';
import { makeKey, makeProject, makeTenant, type Tenant } from './helpers/factories.js';
import { changedTables, fingerprint } from './helpers/fingerprint.js';
import { exampleBody, Fixtures } from './helpers/fixtures.js';
import { objectParams, partyValues, type Party } from './helpers/idor.js';
import { validateResponse } from './helpers/spec-validator.js';
import { fillPath, operations, unrelatedScope, type Op } from './helpers/spec-ops.js';

const ctx = await buildTestApp(t);
const { db } = ctx;

const victim = await makeTenant(db);
const sibling = await makeProject(db, victim);
// An organization the victim's user also belongs to, so keys scoped to it are the same user's keys.
const elsewhere = await makeTenant(db);
await addMembership(db, elsewhere.organization.id, victim.user.id, 8);
const stranger = await makeTenant(db);
const fixtures = new Fixtures(ctx, victim);

const tenantOps = operations.filter((op) => op.tenant && op.scope);

/** Refusals the authentication layer gives: a positive control must not get one of these. */
const AUTH_REFUSAL = /^(API key|You don't have access to the project|This action does not support)/;

interface Caller {
  name: string;
  key: string;
}

async function callersFor(op: Op): Promise<Caller[]> {
  const scope = op.scope!;
  const callers: Caller[] = [
    { name: 'a key of another organization', key: stranger.key },
    {
      name: 'a key scoped to another project',
      key: await makeKey(db, victim.user, ['*'], { scoped_teams: [sibling.id] }),
    },
    {
      name: 'a key scoped to another organization',
      key: await makeKey(db, victim.user, ['*'], { scoped_organizations: [elsewhere.organization.id] }),
    },
    { name: `a key without ${scope}`, key: await makeKey(db, victim.user, [unrelatedScope(scope)]) },
  ];
  if (scope.endsWith(':write')) {
    callers.push({
      name: 'a read-only key for a write',
      key: await makeKey(db, victim.user, [scope.replace(/:write$/, ':read')]),
    });
  }
  return callers;
}

async function send(op: Op, url: string, key: string) {
  const body = exampleBody(op);
  const res = await ctx.inject({
    method: op.method as 'GET',
    url,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  const problems = validateResponse(
    op.operationId,
    res.statusCode,
    res.headers['content-type'] as string | undefined,
    res.body,
  );
  return { status: res.statusCode, body: res.body, problems };
}

t.ok(tenantOps.length >= 10, `${tenantOps.length} operations name a tenant`);

for (const op of tenantOps) {
  t.test(op.operationId, async (t) => {
    // Deletes get an object of their own, so the positive control does not remove the tenant.
    const values = await fixtures.pathValues(op, op.method === 'DELETE');
    const url = fillPath(op.path, values);
    const callers = await callersFor(op);
    const before = await fingerprint(db);
    for (const caller of callers) {
      const res = await send(op, url, caller.key);
      t.ok(res.status === 403 || res.status === 404, `${caller.name}: ${res.status} (${res.body.slice(0, 160)})`);
      t.same(res.problems, [], `${caller.name}: the refusal is in the contract`);
    }
    t.same(changedTables(before, await fingerprint(db)), [], 'nothing changed');

    // The same request with the tenant's own key gets past authentication, so the refusals above
    // came from who was calling, not from the request.
    const own = await send(op, url, victim.key);
    const detail = own.status === 403 ? String(JSON.parse(own.body).detail) : '';
    t.ok(
      own.status !== 401 && !AUTH_REFUSAL.test(detail) && own.status < 500,
      `the tenant's own key: ${own.status} ${detail}`,
    );
    if (own.status >= 300 || op.method !== 'GET') fixtures.forget();
  });
}

// The IDOR row: the caller's own tenant in the path, another tenant's object id after it. Scoped loads
// and scoped writes must both hold, so the answer is never a 2xx and nothing changes. Each operation is
// also sent with the tenant's own objects, which must succeed: a refusal that does not depend on the
// object id proves nothing. Operations that request cannot be built for are listed, with the reason.
const UNBUILDABLE: Record<string, string> = {
  'DELETE /api/projects/{project_id}/dashboards/{id}/':
    'PostHog refuses every dashboard delete with a 405 before any lookup',
  'DELETE /api/projects/{project_id}/insights/{id}/':
    'PostHog refuses every insight delete with a 405 before any lookup (deletion is a PATCH)',
  'DELETE /api/projects/{project_id}/hog_functions/{id}/':
    'PostHog refuses every hog function delete with a 405 before any lookup (deletion is a PATCH)',
  'GET /api/projects/{project_id}/hog_function_templates/{template_id}/':
    "templates are the server's own, the same for every tenant: there is no other tenant's template to name",
  'POST /api/projects/{project_id}/dashboards/{dashboard_id}/collaborators/':
    'the body must name a member of the organization; the row builds bodies from the schema alone',
  'PATCH /api/projects/{project_id}/dashboards/{id}/move_tile/':
    "the body must name a tile of the path's dashboard and a destination; the row builds bodies from the schema alone",
  'POST /api/projects/{project_id}/dashboards/{dashboard_id}/sharing/passwords/':
    "a password can only be added once the dashboard's sharing requires one, which the row does not set up",
  'DELETE /api/projects/{project_id}/dashboards/{dashboard_id}/sharing/passwords/{password_id}/':
    'the row makes no share password to remove (adding one needs sharing set to require passwords)',
  'POST /api/projects/{project_id}/insights/{insight_id}/sharing/passwords/':
    "a password can only be added once the insight's sharing requires one (test/operations/shared.test.ts)",
  'DELETE /api/projects/{project_id}/insights/{insight_id}/sharing/passwords/{password_id}/':
    'the row makes no share password to remove (test/operations/shared.test.ts removes one across tenants)',
  'POST /api/organizations/{organization_id}/projects/{id}/change_organization/':
    'the body must name another organization the caller belongs to; the row builds bodies from the schema alone',
  'POST /api/organizations/{organization_id}/domains/{id}/scim/token/':
    'SCIM is not served here, so every call is refused whatever the domain (PostHog answers so without SCIM)',
};
for (const family of [
  'pipeline_destinations',
  'pipeline_frontend_apps',
  'pipeline_import_apps',
  'pipeline_transformations',
]) {
  UNBUILDABLE[`GET /api/organizations/{organization_id}/${family}/{id}/check_for_updates/`] =
    'only a plugin installed from a url can be checked, and the row installs plugins from source';
}

/** An operation as method and path, with the environments twins under their project route. */
const routeKey = (op: Op) => `${op.method} ${op.path.replace(/^\/api\/environments\//, '/api/projects/')}`;

const ownParty: Party = { name: 'own', tenant: victim, fixtures: new Fixtures(ctx, victim) };
const siblingTenant: Tenant = { ...victim, project: sibling };
const others: (Party & { projectsOnly?: boolean })[] = [
  { name: 'another organization', tenant: stranger, fixtures: new Fixtures(ctx, stranger) },
  {
    name: "an organization the caller's user also belongs to",
    tenant: elsewhere,
    fixtures: new Fixtures(ctx, elsewhere),
  },
  {
    name: 'another project of the organization',
    tenant: siblingTenant,
    fixtures: new Fixtures(ctx, siblingTenant),
    projectsOnly: true,
  },
];

const idorOps = tenantOps.filter((op) => objectParams(op).length > 0);
t.ok(idorOps.length >= 10, `${idorOps.length} operations name an object inside their tenant`);
t.same(
  Object.keys(UNBUILDABLE).filter((k) => !idorOps.some((op) => routeKey(op) === k)),
  [],
  'every operation listed as unbuildable exists',
);

for (const op of idorOps) {
  t.test(`IDOR ${op.operationId}`, async (t) => {
    const objects = objectParams(op);
    // Each object on its own (the others the caller's), then all of them at once.
    const variants = objects.length > 1 ? [...objects.map((p) => [p]), objects] : [objects];
    const own = await partyValues(ctx, ownParty, op, op.method === 'DELETE');
    let tried = 0;
    for (const party of others.filter((p) => !p.projectsOnly || op.tenant?.kind === 'project')) {
      const theirs = await partyValues(ctx, party, op, false);
      for (const foreign of variants) {
        if (!foreign.every((p) => theirs.real.has(p) && theirs.values[p] !== own.values[p])) continue;
        const values = { ...own.values, ...Object.fromEntries(foreign.map((p) => [p, theirs.values[p]!])) };
        const before = await fingerprint(db);
        const res = await send(op, fillPath(op.path, values), victim.key);
        const what = `${foreign.join(', ')} of ${party.name}`;
        t.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status} (${res.body.slice(0, 160)})`);
        t.same(res.problems, [], `${what}: the refusal is in the contract`);
        t.same(changedTables(before, await fingerprint(db)), [], `${what}: nothing changed`);
        tried++;
      }
    }
    const control = await send(op, fillPath(op.path, own.values), victim.key);
    const built = tried > 0 && objects.every((p) => own.real.has(p)) && control.status < 300;
    const reason = UNBUILDABLE[routeKey(op)];
    if (reason) {
      t.notOk(built, `listed as unbuildable (${reason}), yet the row built it: take it off the list`);
    } else {
      t.ok(tried > 0, `another tenant's ${objects.join(', ')} could be made`);
      t.ok(control.status < 300, `the tenant's own objects: ${control.status} (${control.body.slice(0, 160)})`);
    }
  });
}
