// PostHog's /api/environments/{project_id}/ routes: every project operation has a twin in the contract,
// bound to the same handler, and the twin answers exactly as the project route does (the same bodies,
// refusals and tenant boundary).
import t from 'tap';
import { spec } from '../../src/http/spec.js';
import { handlers } from '../../src/operations/index.js';
import type { OperationId } from '../../src/http/types.js';
import { buildTestApp, type CallResult } from '../helpers/app.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { exampleBody, Fixtures } from '../helpers/fixtures.js';
import { byId, operations, unrelatedScope, type Op } from '../helpers/spec-ops.js';

const PROJECT = '/api/projects/{project_id}/';
const ENVIRONMENTS = '/api/environments/{project_id}/';
const projectOps = operations.filter((op) => op.path.startsWith(PROJECT));
const twinOps = operations.filter((op) => op.path.startsWith(ENVIRONMENTS));
const twinId = (id: string) => `environments_${id.replace(/^projects_/, '')}` as OperationId;
/** What may differ between an operation and its twin: the words and the docs grouping. */
const contractOf = ({ summary, description, tags, 'x-twin-of': _, operationId, ...rest }: Record<string, unknown>) =>
  rest;

t.test(
  'the contract: every project operation has its twin, and nothing else is under /api/environments/',
  async (t) => {
    t.ok(projectOps.length > 40, `${projectOps.length} project operations`);
    t.equal(twinOps.length, projectOps.length, 'one twin per project operation');
    for (const op of projectOps) {
      const twin = byId.get(twinId(op.operationId));
      if (!t.ok(twin, `${op.operationId} has its twin ${twinId(op.operationId)}`)) continue;
      t.equal(twin!.path, op.path.replace(PROJECT, ENVIRONMENTS), `${twin!.operationId}: its path`);
      t.equal(twin!.method, op.method, `${twin!.operationId}: its method`);
      t.same(
        contractOf(twin!.raw),
        contractOf(op.raw),
        `${twin!.operationId}: parameters, scope, body and responses are ${op.operationId}'s`,
      );
      t.same(
        spec.paths[twin!.path]!.parameters,
        spec.paths[op.path]!.parameters,
        `${twin!.operationId}: path-level parameters`,
      );
      t.equal(twin!.raw['x-twin-of'], op.operationId, `${twin!.operationId} records its project operation`);
      t.equal(
        handlers[twin!.operationId],
        handlers[op.operationId],
        `${twin!.operationId} runs ${op.operationId}'s handler`,
      );
    }
    for (const twin of twinOps) t.ok(twin.raw['x-twin-of'], `${twin.operationId} is derived, not hand-written`);
    t.ok(byId.get('environments_query_create'), "PostHog's environments_query_create is a twin like the others");
    t.ok(
      byId.get('environments_batch_exports_list'),
      'project batch exports take PostHog’s environments_batch_exports_* names',
    );
  },
);

const ctx = await buildTestApp(t);
const { db, call } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const fixtures = new Fixtures(ctx, a);
const strangerFixtures = new Fixtures(ctx, b);

/**
 * The same answer, read from either route: paging links name the route they were asked on, and a
 * sharing configuration that was never saved offers a fresh token on every read, a dashboard read
 * stamps `last_accessed_at`, and the TypeScript module carries its generation time.
 */
const comparable = (res: CallResult) => ({
  status: res.status,
  body: JSON.parse(
    JSON.stringify(res.body ?? null)
      .replaceAll('/api/environments/', '/api/projects/')
      .replace(/(\\?"last_accessed_at\\?":\\?")[^"\\]*/g, '$1<time>')
      .replace(/Generated at: [^\s\\"]+/g, 'Generated at: <time>'),
    (k, v) => (k === 'access_token' ? typeof v : v),
  ),
});

const reads = projectOps.filter((op) => op.method === 'GET');

t.test('every read answers the same under both routes', async (t) => {
  for (const op of reads) {
    const params = await fixtures.pathValues(op);
    const project = await call(op.operationId, { key: a.key, params });
    const twin = await call(twinId(op.operationId), { key: a.key, params });
    t.same(comparable(twin), comparable(project), `${op.operationId}: ${project.status}`);
  }
});

/** One read per resource family (the last of each tag: an item, where there is one) and the query, for the refusals. */
const samples = [...new Map(reads.map((op) => [`${op.raw.tags}`, op])).values(), byId.get('query_create')!];

t.test('refusals are the same: no key, a key without the scope, another tenant, another tenant’s object', async (t) => {
  t.ok(samples.length >= 7 && samples.every(Boolean), `${samples.map((op) => op.operationId).join(', ')}`);
  for (const op of samples) {
    const params = await fixtures.pathValues(op);
    const both = async (key: string | undefined, p: Record<string, string | number>) => {
      const body = exampleBody(op);
      const [project, twin] = [
        await call(op.operationId, { key, params: p, body }),
        await call(twinId(op.operationId), { key, params: p, body }),
      ];
      t.same(comparable(twin), comparable(project), `${op.operationId}: the twin answers ${project.status} too`);
      return project.status;
    };
    t.equal(await both(undefined, params), 401, `${op.operationId}: no key`);
    t.equal(
      await both(await makeKey(db, a.user, [unrelatedScope(op.scope!)]), params),
      403,
      `${op.operationId}: a key without ${op.scope}`,
    );
    t.ok(
      [403, 404].includes(await both(b.key, params)),
      `${op.operationId}: another organization's key on this project`,
    );
    t.ok(
      [403, 404].includes(await both(a.key, { ...params, project_id: b.project.id })),
      `${op.operationId}: another tenant's project`,
    );
    const foreign = { ...(await strangerFixtures.pathValues(op)), project_id: a.project.id };
    if (Object.keys(foreign).length > 1) {
      t.equal(await both(a.key, foreign), 404, `${op.operationId}: another tenant's object on our project`);
    }
  }
});

t.test('writes through the twin are the project’s own', async (t) => {
  const created = await call('environments_dashboards_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 'Through the environment' },
  });
  t.equal(created.status, 201);
  const read = await call('dashboards_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: created.body.id },
  });
  t.equal(read.body.name, 'Through the environment', 'the project route reads what the twin wrote');
  const patched = await call('environments_dashboards_partial_update', {
    key: a.key,
    params: { project_id: a.project.id, id: created.body.id },
    body: { name: 'Renamed' },
  });
  t.equal(patched.body.name, 'Renamed');
  const invalid = await call('environments_dashboards_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { name: 5 },
  });
  t.match(
    invalid,
    { status: 400, body: { type: 'validation_error', attr: 'name' } },
    'validation is the project operation’s',
  );
  const foreign = await call('environments_dashboards_partial_update', {
    key: b.key,
    params: { project_id: b.project.id, id: created.body.id },
    body: { name: 'Taken' },
  });
  t.equal(foreign.status, 404, "another tenant's object id on its own environment route");
  const across = await call('environments_dashboards_partial_update', {
    key: b.key,
    params: { project_id: a.project.id, id: created.body.id },
    body: { name: 'Taken' },
  });
  t.ok([403, 404].includes(across.status), 'another tenant on our environment route');
  const after = await call('dashboards_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: created.body.id },
  });
  t.equal(after.body.name, 'Renamed', 'nothing changed');
  const query = await call('environments_query_create', {
    key: a.key,
    params: { project_id: '@current' },
    body: exampleBody(byId.get('query_create') as Op),
  });
  t.equal(query.status, 200, '@current works on the environment route');
});
