// Object ids for the tenant matrix's IDOR row: the path's tenant stays the caller's own while an object
// id names another tenant's object. Ids come from the contract's create operations (Fixtures), except
// for objects no operation creates from a body built from the schema alone (runs, definitions, events,
// members, collaborators; plugins of a family, domains and batch exports need real values): those are
// made here, directly in the database.
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { insertCollaborator } from '../../src/dashboards/collaborator-queries.js';
import { insertBackfill, insertRuns } from '../../src/batch-exports/run-queries.js';
import { insertBatchExport } from '../../src/batch-exports/queries.js';
import { insertDomain } from '../../src/domains/queries.js';
import { insertPlugin } from '../../src/plugins/queries.js';
import { dashboards, event_definitions, property_definitions } from '../../src/db/schema/index.js';
import type { TestContext } from './app.js';
import { capture, personOf } from './events.js';
import { makeMember, type Tenant } from './factories.js';
import type { Fixtures } from './fixtures.js';
import { pathParams, type Op } from './spec-ops.js';

/** A tenant whose objects are used, with the fixtures that make them. */
export interface Party {
  name: string;
  tenant: Tenant;
  fixtures: Fixtures;
}

/** Path parameters that name an object inside the path's tenant (everything but the tenant itself). */
export function objectParams(op: Op): string[] {
  return pathParams(op).filter((p) => p !== op.tenant?.param);
}

type Made = (
  ctx: TestContext,
  party: Party,
  values: Record<string, string | number>,
  path: string,
) => Promise<string | number>;

/** An S3 export of the party's project; nothing is sent anywhere, since no worker runs in these tests. */
async function makeExport(ctx: TestContext, party: Party): Promise<string> {
  const exp = await insertBatchExport(ctx.db, {
    project_id: party.tenant.project.id,
    name: 'idor export',
    destination_type: 'S3',
    destination_config: {
      bucket_name: 'idor',
      region: 'us-east-1',
      prefix: '',
      aws_access_key_id: 'id',
      aws_secret_access_key: 'secret',
    },
    paused: true,
  });
  return exp.id;
}

let interval = 0;

/** Objects of the path's tenant that no operation creates, by the collection and parameter naming them. */
const MAKERS: { path: RegExp; param: string; make: Made }[] = [
  {
    path: /\/pipeline_(destinations|frontend_apps|import_apps|transformations)\/\{id\}\//,
    param: 'id',
    async make(ctx, party, _values, path) {
      // A family shows the plugins whose capabilities fit it; a source plugin's files are editable.
      const family = /pipeline_(\w+?)\//.exec(path)![1]!;
      const capabilities: Record<string, Record<string, string[]>> = {
        destinations: { methods: ['onEvent'] },
        transformations: { methods: ['processEvent'] },
        import_apps: { scheduled_tasks: ['runEveryMinute'] },
        frontend_apps: {},
      };
      const plugin = await insertPlugin(ctx.db, {
        organization_id: party.tenant.organization.id,
        name: `idor ${family}`,
        plugin_type: 'source',
        capabilities: capabilities[family]!,
      });
      return plugin.id;
    },
  },
  {
    path: /\/domains\/\{id\}\//,
    param: 'id',
    async make(ctx, party) {
      const domain = `idor-${randomUUID().slice(0, 8)}.example.com`;
      return (await insertDomain(ctx.db, party.tenant.organization.id, { domain }))!.id;
    },
  },
  {
    path: /\/batch_exports\/\{(id|batch_export_id)\}\//,
    param: 'batch_export_id',
    make: makeExport,
  },
  {
    path: /\/batch_exports\/\{id\}\/(?!runs|backfills)/,
    param: 'id',
    make: makeExport,
  },
  {
    path: /\/batch_exports\/\{batch_export_id\}\/backfills\/\{id\}\//,
    param: 'id',
    async make(ctx, party, values) {
      const start = new Date(Date.UTC(2020, 0, 1));
      const backfill = await insertBackfill(
        ctx.db,
        { project_id: party.tenant.project.id },
        {
          batch_export_id: String(values.batch_export_id),
          start_at: start,
          end_at: new Date(start.getTime() + 3_600_000),
          adjusted_start_at: null,
        },
      );
      return backfill!.id;
    },
  },
  {
    path: /\/batch_exports\/\{batch_export_id\}\/runs\/\{id\}\//,
    param: 'id',
    async make(ctx, party, values) {
      // Each run its own hour in the past: scheduled runs are unique per export and interval.
      const end = new Date(Date.UTC(2020, 0, 1) + ++interval * 3_600_000);
      const [run] = await insertRuns(ctx.db, { project_id: party.tenant.project.id }, String(values.batch_export_id), [
        { start: new Date(end.getTime() - 3_600_000), end },
      ]);
      return run!.id;
    },
  },
  {
    path: /\/event_definitions\/\{id\}\//,
    param: 'id',
    async make(ctx, party) {
      const name = `idor event ${randomUUID().slice(0, 8)}`;
      await capture(ctx, party.tenant.project.api_token, [{ event: name, distinct_id: 'idor' }]);
      const [row] = await ctx.db
        .select({ id: event_definitions.id })
        .from(event_definitions)
        .where(and(eq(event_definitions.project_id, party.tenant.project.id), eq(event_definitions.name, name)));
      return row!.id;
    },
  },
  {
    path: /\/property_definitions\/\{id\}\//,
    param: 'id',
    async make(ctx, party) {
      const name = `idor_${randomUUID().slice(0, 8)}`;
      await capture(ctx, party.tenant.project.api_token, [
        { event: 'idor', distinct_id: 'idor', properties: { [name]: 1 } },
      ]);
      const [row] = await ctx.db
        .select({ id: property_definitions.id })
        .from(property_definitions)
        .where(and(eq(property_definitions.project_id, party.tenant.project.id), eq(property_definitions.name, name)));
      return row!.id;
    },
  },
  {
    path: /\/events\/\{id\}\//,
    param: 'id',
    async make(ctx, party) {
      const uuid = randomUUID();
      await capture(ctx, party.tenant.project.api_token, [{ event: 'idor', distinct_id: 'idor', uuid }]);
      return uuid;
    },
  },
  {
    path: /\/persons\/\{id\}\//,
    param: 'id',
    async make(ctx, party) {
      const distinctId = `idor-${randomUUID()}`;
      await capture(ctx, party.tenant.project.api_token, [{ event: 'idor', distinct_id: distinctId }]);
      return (await personOf(ctx.db, party.tenant.project.id, distinctId))!.id;
    },
  },
  {
    path: /\/members\/\{user__uuid\}\//,
    param: 'user__uuid',
    async make(ctx, party) {
      return (await makeMember(ctx.db, party.tenant, 1)).user.uuid;
    },
  },
  {
    path: /\/dashboards\/\{dashboard_id\}\/collaborators\/\{user__uuid\}\//,
    param: 'user__uuid',
    async make(ctx, party, values) {
      // Collaborators count only above the lowest restriction level, where they can be removed.
      const dashboardId = Number(values.dashboard_id);
      await ctx.db.update(dashboards).set({ restriction_level: 37 }).where(eq(dashboards.id, dashboardId));
      const { user } = await makeMember(ctx.db, party.tenant, 1);
      await insertCollaborator(ctx.db, party.tenant.project.id, dashboardId, user.id, 37);
      return user.uuid;
    },
  },
];

/**
 * Real values for every path parameter of `op` in `party`'s tenant, and whether each names an object
 * that exists (a stand-in id proves nothing). `fresh` makes new objects, for requests that remove them.
 */
export async function partyValues(
  ctx: TestContext,
  party: Party,
  op: Op,
  fresh: boolean,
): Promise<{ values: Record<string, string | number>; real: Set<string> }> {
  const values: Record<string, string | number> = {};
  const real = new Set<string>();
  for (const name of pathParams(op)) {
    const maker = MAKERS.find((m) => m.param === name && m.path.test(op.path));
    // A maker builds on the objects before it in the path, so only on real ones.
    if (maker && Object.keys(values).every((n) => real.has(n))) {
      values[name] = await maker.make(ctx, party, values, op.path);
      real.add(name);
      continue;
    }
    values[name] = await party.fixtures.valueFor(op, name, fresh);
    if (party.fixtures.isReal(values[name]!)) real.add(name);
  }
  return { values, real };
}
