// The tenant matrix: every operation that names an organization or a project (or is one) refuses
// callers from outside it. Operations are enumerated from the contract, so every area is covered.
import t from 'tap';
import { addMembership } from '../src/db/queries/organizations.js';
import { buildTestApp } from './helpers/app.js';
import { makeKey, makeProject, makeTenant } from './helpers/factories.js';
import { changedTables, fingerprint } from './helpers/fingerprint.js';
import { exampleBody, Fixtures } from './helpers/fixtures.js';
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
    { name: 'a key scoped to another project', key: await makeKey(db, victim.user, ['*'], { scoped_teams: [sibling.id] }) },
    {
      name: 'a key scoped to another organization',
      key: await makeKey(db, victim.user, ['*'], { scoped_organizations: [elsewhere.organization.id] }),
    },
    { name: `a key without ${scope}`, key: await makeKey(db, victim.user, [unrelatedScope(scope)]) },
  ];
  if (scope.endsWith(':write')) {
    callers.push({ name: 'a read-only key for a write', key: await makeKey(db, victim.user, [scope.replace(/:write$/, ':read')]) });
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
  const problems = validateResponse(op.operationId, res.statusCode, res.headers['content-type'] as string | undefined, res.body);
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
    t.ok(own.status !== 401 && !AUTH_REFUSAL.test(detail) && own.status < 500, `the tenant's own key: ${own.status} ${detail}`);
    if (own.status >= 300 || op.method !== 'GET') fixtures.forget();
  });
}
