// Our live answers against PostHog's current published schema (a copy kept beside the repository, see
// its README): every operation we serve that PostHog's schema also has is exercised with a realistic
// fixture and its 2xx body validated against PostHog's response schema. A mismatch fails unless it is a
// known generator artifact of PostHog's export (posthog-schema/artifacts.ts) or a gap recorded today
// (posthog-schema/known-gaps.ts, printed as todos until it is empty).
// POSTHOG_SCHEMA_GAPS=print prints today's unlisted gaps in known-gaps.ts's format.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject } from 'ajv';
import formats from 'ajv-formats';
import t from 'tap';
import { buildTestApp, type CallResult } from './helpers/app.js';
import { insertEvents } from './helpers/event-rows.js';
import { capture } from './helpers/events.js';
import { makeMember, makeTenant } from './helpers/factories.js';
import { exampleBody, Fixtures } from './helpers/fixtures.js';
import type { OperationId } from '../src/http/types.js';
import { deref, operations, pathParams, type Op } from './helpers/spec-ops.js';
import { nullableComposition } from './helpers/spec-validator.js';
import { artifactOf } from './posthog-schema/artifacts.js';
import { KNOWN_GAPS } from './posthog-schema/known-gaps.js';
import { type Doc, resolve, responseGaps, shape, theirDeref, theirOperations } from './posthog-schema/compare.js';

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const ORDER: Record<string, number> = { GET: 0, POST: 1, PUT: 1, PATCH: 1, DELETE: 2 };

/** One mismatch in PostHog's words, list indexes folded: `/results/* required team_id`. */
function gapOf(e: ErrorObject): string {
  const at = e.instancePath.replace(/\/\d+(?=\/|$)/g, '/*') || '/';
  const what =
    e.keyword === 'required'
      ? `required ${(e.params as { missingProperty: string }).missingProperty}`
      : `${e.keyword} ${e.message}`;
  return `${at} ${what}`;
}

/** A response never carries writeOnly fields (OpenAPI 3.0), so they are not required in one. */
function withoutWriteOnlyRequired(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutWriteOnlyRequired);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(node)) out[k] = withoutWriteOnlyRequired(v);
  if (Array.isArray(out.required) && out.properties)
    out.required = out.required.filter((n: string) => !out.properties[n]?.writeOnly);
  return out;
}

async function compare(posthog: Doc) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  formats.default(ajv);
  ajv.addSchema(nullableComposition(withoutWriteOnlyRequired(posthog)) as object, 'posthog');

  const theirs = new Map<string, { path: string; method: string; op: any }>();
  for (const [path, item] of Object.entries(posthog.paths)) {
    for (const [method, op] of Object.entries(item))
      if (op?.operationId) theirs.set(`${method.toUpperCase()} ${shape(path)}`, { path, method, op });
  }
  // The environments twins answer exactly as their project operations (test/operations/environments.test.ts).
  const shared = operations
    .filter((op) => !op.path.startsWith('/api/environments/') && theirs.has(`${op.method} ${shape(op.path)}`))
    .sort((x, y) => ORDER[x.method]! - ORDER[y.method]!);

  const ctx = await buildTestApp(t);
  const { db, call } = ctx;
  const tenant = await makeTenant(db);
  const fixtures = new Fixtures(ctx, tenant);
  // Data for the definitions, events and query operations: captured as an SDK sends it.
  await capture(ctx, tenant.project.api_token, [
    { event: 'signed up', distinct_id: 'ann', properties: { plan: 'pro', $browser: 'Chrome', price: 12 } },
    {
      event: '$pageview',
      distinct_id: 'ann',
      properties: { $current_url: 'https://example.com/', $browser: 'Chrome' },
    },
  ]);
  await insertEvents(db, tenant.project.id, [
    { event: 'stored', distinct_id: 'bob', properties: { plan: 'free' }, timestamp: new Date('2024-01-01T00:30:00Z') },
  ]);

  // Bodies PostHog's users send where the contract's example or a minimal body is not enough for a 2xx.
  const org = { organization_id: tenant.organization.id };
  const proj = { project_id: tenant.project.id };
  const noop = { name: 'noop', destination: { type: 'NoOp', config: {} }, interval: 'hour', paused: true };
  const range = { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-01T02:00:00Z' };
  const colleague = await makeMember(db, tenant);
  const BODIES: Record<string, unknown> = {
    domains_create: { domain: 'posthog-schema.example.com' },
    batch_exports_create: noop,
    projects_batch_exports_create: noop,
    batch_exports_backfill_create: range,
    projects_batch_exports_backfill_create: range,
    projects_batch_exports_backfills_create: range,
    dashboards_collaborators_create: { user_uuid: colleague.user.uuid, level: 37 },
  };
  // The objects the other operations name, made as a user would before reading them.
  const made = async (id: OperationId, params: Record<string, string | number>, body: unknown) => {
    const res = await call(id, { key: tenant.key, params, body });
    if (res.status >= 300) throw new Error(`${id}: ${res.status} ${res.raw}`);
    return res.body;
  };
  await made('domains_create', org, { domain: 'seeded.example.com' });
  await made('batch_exports_create', org, noop);
  const exported = await made('projects_batch_exports_create', proj, noop);
  await made('projects_batch_exports_backfills_create', { ...proj, batch_export_id: exported.id }, range);
  const locked = await made('dashboards_create', proj, { name: 'Locked', restriction_level: 37 });
  await made(
    'dashboards_collaborators_create',
    { ...proj, dashboard_id: locked.id },
    { user_uuid: colleague.user.uuid, level: 37 },
  );
  // An asynchronous query, complete before its status is read (and then cancelled, which answers 204).
  await made('query_create', proj, {
    query: { kind: 'HogQLQuery', query: 'select event, count() from events group by event' },
    refresh: 'async',
    client_query_id: 'posthog-schema',
  });
  for (let i = 0; i < 200; i++) {
    const res = await call('query_retrieve', { key: tenant.key, params: { ...proj, id: 'posthog-schema' } });
    if (res.status !== 202) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  /** Path values that must name one particular object: the collaborator routes need the locked dashboard. */
  const PARAMS: Record<string, Record<string, string | number>> = {
    query_retrieve: { id: 'posthog-schema' },
    query_destroy: { id: 'posthog-schema' },
    dashboards_collaborators_create: { dashboard_id: locked.id },
    dashboards_collaborators_destroy: { dashboard_id: locked.id, user__uuid: colleague.user.uuid },
  };

  /** Path values: made through the contract, else the first of the collection's own listing. */
  async function valuesFor(op: Op): Promise<Record<string, string | number>> {
    const values = await fixtures.pathValues(op, op.method === 'DELETE');
    for (const name of pathParams(op)) {
      if (name === 'batch_export_id') values[name] = exported.id; // the one with a backfill and its runs
      if (fixtures.isReal(values[name]!) || name === 'batch_export_id') continue;
      if (name === 'uuid' && op.path.startsWith('/api/users/')) {
        values[name] = '@me'; // a key may name only its own user, as in PostHog
        continue;
      }
      if (name === 'user__uuid' && op.path.includes('/members/')) {
        // Removing or changing the owner would end the run; a member of its own is PostHog's case.
        values[name] = (await makeMember(db, tenant)).user.uuid;
        continue;
      }
      const collection = operations.find(
        (o) => o.method === 'GET' && o.path === op.path.slice(0, op.path.indexOf(`{${name}}`)),
      );
      if (!collection) continue;
      const listed = await call(collection.operationId, {
        key: tenant.key,
        params: { ...(await fixtures.pathValues(collection)), ...values },
      });
      const first = listed.body?.results?.[0];
      const id = name.includes('__')
        ? name.split('__').reduce((acc: any, k) => acc?.[k], first)
        : (first?.id ?? first?.uuid);
      if (id !== undefined) values[name] = id;
    }
    return values;
  }

  const printed: Record<string, string[]> = {};
  for (const op of shared) {
    const { path, method, op: their } = theirs.get(`${op.method} ${shape(op.path)}`)!;
    await t.test(`${op.method} ${op.path} (${op.operationId}) against PostHog's ${their.operationId}`, async (t) => {
      if (op.operationId === 'dashboards_collaborators_create')
        await call('dashboards_collaborators_destroy', {
          key: tenant.key,
          params: { ...proj, ...PARAMS.dashboards_collaborators_destroy },
        });
      const res: CallResult = await call(op.operationId, {
        key: tenant.key,
        params: { ...(await valuesFor(op)), ...PARAMS[op.operationId] },
        body: op.operationId in BODIES ? BODIES[op.operationId] : exampleBody(op),
        query: op.operationId === 'events_values_retrieve' ? { key: 'plan' } : undefined,
      });
      fixtures.forget();
      if (res.status >= 300)
        return void t.pass(`answered ${res.status} to its fixture, so nothing was compared: ${res.raw.slice(0, 200)}`, {
          todo: true,
        });
      const gaps: string[] = [];
      let status = String(res.status);
      if (!their.responses?.[status]) {
        // PostHog's export gives create-like actions a 201 where PostHog answers 200; compare with its 2xx body.
        const documented = Object.keys(their.responses ?? {}).find((c) => c.startsWith('2'));
        gaps.push(`status ${res.status} (PostHog documents ${documented ?? 'none'})`);
        status = documented ?? status;
      }
      const content = their.responses?.[status]?.content?.['application/json'];
      if (content?.schema) {
        const response = `posthog#/paths/${escapePointer(path)}/${method}/responses/${status}`;
        const ref = `${response}/content/application~1json/schema`;
        const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
        if (!validate(res.body)) gaps.push(...new Set((validate.errors ?? []).map(gapOf)));
      } else if (res.status !== 204) {
        gaps.push('body (PostHog documents none)');
      }
      const known = new Set(KNOWN_GAPS[op.operationId] ?? []);
      for (const gap of gaps) {
        const artifact = artifactOf(op.operationId, gap);
        if (artifact) t.pass(`${gap}: PostHog's generator artifact (${artifact})`);
        else if (known.delete(gap))
          t.pass(`known gap: ${gap}`, { todo: 'a known gap: remove it from known-gaps.ts once the field is served' });
        else {
          (printed[op.operationId] ??= []).push(gap);
          t.fail(`${gap}: not in PostHog's generator artifacts nor in today's known gaps`);
        }
      }
      for (const fixed of known) t.comment(`known gap no longer seen, remove it from known-gaps.ts: ${fixed}`);
      if (!gaps.length) t.pass('matches PostHog’s schema');
    });
  }
  if (process.env.POSTHOG_SCHEMA_GAPS === 'print') console.error(JSON.stringify(printed, null, 2));
}

/**
 * The same comparison made on the schemas alone, for every answer our contract allows, not only those the
 * fixtures produce (a creator who was deleted, a field a fixture leaves null): each difference is one of
 * PostHog's generator artifacts or fails.
 */
function compareSchemas(posthog: Doc) {
  const theirs = theirOperations(posthog);
  const resolveTheirs = (node: any) => resolve((n) => theirDeref(posthog, n), node);
  t.test('every answer our contract allows, against PostHog’s schema', async (t) => {
    for (const op of operations) {
      if (op.path.startsWith('/api/environments/')) continue;
      const match = theirs.get(`${op.method} ${shape(op.path)}`);
      if (!match) continue;
      for (const [status, response] of Object.entries<any>(op.raw.responses ?? {})) {
        const mine = deref(response)?.content?.['application/json']?.schema;
        const their = match.op.responses?.[status]?.content?.['application/json']?.schema;
        if (!/^2/.test(status) || !mine || !their) continue;
        for (const gap of responseGaps('', mine, their, resolveTheirs)) {
          const artifact = artifactOf(op.operationId, gap);
          if (artifact) t.pass(`${op.operationId} ${status} ${gap}: PostHog's generator artifact (${artifact})`);
          else t.fail(`${op.operationId} ${status} ${gap}: not in PostHog's generator artifacts`);
        }
      }
    }
  });
}

const schemaPath = fileURLToPath(
  new URL('../../shared/reference/posthog-schema/posthog-current.json', import.meta.url),
);
if (!existsSync(schemaPath)) {
  t.pass('live answers against PostHog’s schema', {
    skip:
      "PostHog's schema copy is absent (../shared/reference/posthog-schema/posthog-current.json " +
      'from the repository root): nothing to compare against',
  });
} else {
  const posthog = JSON.parse(readFileSync(schemaPath, 'utf8'));
  compareSchemas(posthog);
  await compare(posthog);
}
