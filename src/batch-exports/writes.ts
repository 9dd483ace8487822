// Creating and changing an export, and testing its destination: the rules that span fields, where a
// destination may point, and sealing its secrets, in PostHog's order. Handlers pass the body as sent.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import type { Tenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import {
  insertBatchExport,
  oldestProjectId,
  projectInOrganization,
  updateBatchExport,
  type BatchExportInsert,
  type BatchExportRow,
  type ExportScope,
} from './queries.js';
import { parseFilterList } from '../events/filters.js';
import type { TenantNetwork } from '../net/index.js';
import type { SecretBox } from '../secrets/index.js';
import { validateDestinationConfig, type DestinationType } from './destination-config.js';
import { checkDestinationNetwork } from './destination-network.js';
import { checkSecretNotRedirected, openDestinationSecrets, sealDestinationSecrets } from './destination-secrets.js';
import { runTestStep, stepCount } from './destination-tests.js';
import { compileHogQL } from './hogql.js';
import { exportModel } from './records.js';

type Schemas = components['schemas'];

/** What a write needs besides the database: the key that seals secrets and where tenants may connect. */
export interface ExportDeps {
  box: SecretBox;
  network: TenantNetwork;
}

/** PostHog's recursive_dict_merge: nested objects merge, anything else is replaced. */
function merge(old: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...old };
  for (const [k, v] of Object.entries(patch)) {
    const prev = old[k];
    const isObj = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
    out[k] = isObj(v) && isObj(prev) ? merge(prev as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

interface Shape {
  model: string | null;
  destination_type: string;
  hogql_query: string | null;
  filters: unknown;
}

/** The rules that span fields, checked on the export as it will be after the write. */
function checkExport(e: Shape): void {
  const model = exportModel(e);
  if (e.destination_type === 'HTTP' && model !== 'events') {
    throw ApiError.validation(null, 'HTTP batch exports only support the events model');
  }
  if (e.hogql_query && model !== 'events') {
    throw ApiError.validation('hogql_query', 'A HogQL query can only be used with the events model');
  }
  if (e.hogql_query && e.destination_type === 'HTTP') {
    throw ApiError.validation(
      'hogql_query',
      'HTTP batch exports send events in the capture format and take no HogQL query',
    );
  }
  if (parseFilterList(e.filters, 'filters') && model !== 'events') {
    throw ApiError.validation('filters', 'Filters can only be used with the events model');
  }
}

const date = (s: string | null | undefined) => (s === undefined ? undefined : s === null ? null : new Date(s));

/** A stored `filters` value: null for none, else the list as sent. */
const filtersOf = (f: unknown[] | null | undefined) => (f ? (f as Record<string, unknown>[]) : null);

/** The project a new export reads from: the route's, else `team_id` in the organization, else its oldest. */
async function targetProject(db: Db, tenant: Tenant, teamId: number | undefined): Promise<number> {
  if (tenant.project_id !== undefined) return tenant.project_id;
  if (teamId !== undefined) {
    if (!(await projectInOrganization(db, tenant.organization_id, teamId))) {
      throw ApiError.validation(
        'team_id',
        'Team does not exist on this organization, or it is private and you do not have access to it.',
      );
    }
    return teamId;
  }
  const oldest = await oldestProjectId(db, tenant.organization_id);
  if (oldest === undefined) throw ApiError.validation('team_id', 'This organization has no project to export from.');
  return oldest;
}

export async function createExport(
  db: Db,
  tenant: Tenant,
  deps: ExportDeps,
  body: Schemas['BatchExportRequest'],
): Promise<BatchExportRow> {
  const type = body.destination.type as DestinationType;
  const config = body.destination.config ?? {};
  validateDestinationConfig(type, config);
  await checkDestinationNetwork(type, config, deps.network);
  const hogql = body.hogql_query || null;
  // As PostHog's model field: absent is `events`, an explicit null is stored (and runs as `events`).
  const model = body.model === undefined ? 'events' : body.model;
  const filters = filtersOf(body.filters);
  checkExport({ model, destination_type: type, hogql_query: hogql, filters });
  const schema = hogql ? await compileHogQL(hogql) : null;
  const values: BatchExportInsert = {
    project_id: await targetProject(db, tenant, body.team_id),
    name: body.name,
    model,
    destination_type: type,
    destination_config: sealDestinationSecrets(deps.box, type, config, config),
    interval: body.interval,
    paused: body.paused ?? false,
    last_paused_at: date(body.last_paused_at) ?? (body.paused ? new Date() : null),
    start_at: date(body.start_at) ?? null,
    end_at: date(body.end_at) ?? null,
    hogql_query: hogql,
    schema,
    filters,
  };
  return insertBatchExport(db, values);
}

/** PATCH and PUT: the given fields change, the destination config merges into the stored one. */
export async function updateExport(
  db: Db,
  scope: ExportScope,
  deps: ExportDeps,
  exp: BatchExportRow,
  body: Schemas['PatchedBatchExportRequest'],
): Promise<BatchExportRow> {
  const values: Partial<BatchExportInsert> = {};
  if (body.name !== undefined) values.name = body.name;
  if (body.model !== undefined) values.model = body.model;
  if (body.interval !== undefined) values.interval = body.interval;
  if (body.start_at !== undefined) values.start_at = date(body.start_at);
  if (body.end_at !== undefined) values.end_at = date(body.end_at);
  if (body.last_paused_at !== undefined) values.last_paused_at = date(body.last_paused_at);
  if (body.filters !== undefined) values.filters = filtersOf(body.filters);
  if (body.destination) {
    const type = (body.destination.type ?? exp.destination_type) as DestinationType;
    // A new type starts from its own config; the same type merges, so secrets may be left out.
    const patch = body.destination.config ?? {};
    const config = type === exp.destination_type ? merge(exp.destination_config, patch) : patch;
    validateDestinationConfig(type, config);
    // Where it may point comes first: a refused address is refused whatever secrets come with it.
    await checkDestinationNetwork(type, config, deps.network);
    if (type === exp.destination_type) checkSecretNotRedirected(type, exp.destination_config, patch, config);
    values.destination_type = type;
    values.destination_config = sealDestinationSecrets(deps.box, type, config, patch);
  }
  if (body.hogql_query !== undefined) {
    values.hogql_query = body.hogql_query || null;
    values.schema = values.hogql_query ? await compileHogQL(values.hogql_query) : null;
  }
  checkExport({
    model: values.model !== undefined ? values.model : exp.model,
    destination_type: values.destination_type ?? exp.destination_type,
    hogql_query: values.hogql_query !== undefined ? values.hogql_query : exp.hogql_query,
    filters: values.filters !== undefined ? values.filters : exp.filters,
  });
  if (body.paused === true && !exp.paused) Object.assign(values, { paused: true, last_paused_at: new Date() });
  if (body.paused === false && exp.paused) Object.assign(values, { paused: false, schedule_from: new Date() });
  const row = Object.keys(values).length ? await updateBatchExport(db, scope, exp.id, values) : exp;
  return row ?? exp;
}

function checkStep(type: string, step: number | undefined): number {
  const index = step ?? 0;
  const count = stepCount(type);
  if (!count) throw ApiError.validation('destination__type', `Destination ${type} has no test.`);
  if (index >= count)
    throw ApiError.validation('step', `Step ${index} does not exist; destination ${type} has ${count} test steps.`);
  return index;
}

/** The stored export's destination with the body's changes laid over, secrets in clear, for a test step. */
export async function testStepOnExport(
  deps: ExportDeps,
  exp: BatchExportRow,
  body: Schemas['BatchExportTestStepRequest'],
) {
  const type = (body.destination?.type ?? exp.destination_type) as DestinationType;
  const index = checkStep(type, body.step);
  const patch = body.destination?.config ?? {};
  const stored = type === exp.destination_type ? exp.destination_config : {};
  const config = merge(stored, patch);
  validateDestinationConfig(type, config);
  await checkDestinationNetwork(type, config, deps.network);
  if (type === exp.destination_type) checkSecretNotRedirected(type, exp.destination_config, patch, config);
  const clear = merge(openDestinationSecrets(deps.box, type, stored), patch);
  // The table the export writes to when the config names none (its model's name), as the writer does.
  if (type === 'Postgres' && !clear.table_name) clear.table_name = exportModel(exp);
  return runTestStep(type, index, clear, deps.network);
}

/** A test step of a destination not yet saved, with the config as sent. */
export async function testStepNew(network: TenantNetwork, body: Schemas['BatchExportTestStepNewRequest']) {
  const { destination, step } = body;
  const type = destination.type as DestinationType;
  const config = destination.config ?? {};
  validateDestinationConfig(type, config);
  const index = checkStep(type, step);
  await checkDestinationNetwork(type, config, network);
  return runTestStep(type, index, config, network);
}
