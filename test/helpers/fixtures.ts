// Objects for path ids, made through the contract's own create operations so that any new resource
// works without edits: `{id}` of `/api/projects/{project_id}/dashboards/{id}/` is created by POST on
// `/api/projects/{project_id}/dashboards/` with a small valid body built from its request schema.
import { randomUUID } from 'node:crypto';
import type { OperationId } from '../../src/http/types.js';
import type { TestContext } from './app.js';
import type { Tenant } from './factories.js';
import { creatorOf, deref, idFromCreated, minimalValue, pathParams, type Op, type Schema } from './spec-ops.js';

/** A body for `op`: the spec's own example when it gives one, else a minimal valid value. */
export function exampleBody(op: Op): unknown {
  if (!op.body) return undefined;
  const content = deref(op.raw.requestBody)?.content?.['application/json'] as Schema | undefined;
  if (content?.example !== undefined) return content.example;
  const first = Object.values((content?.examples ?? {}) as Record<string, Schema>)[0];
  if (first) return deref(first).value;
  return minimalValue(op.body);
}

/** A value that names nothing, in the parameter's own format. */
export function nonexistentValue(op: Op, param: string): string {
  const schema = deref(op.params.find((p) => p.name === param)?.schema ?? {});
  if (schema.type === 'integer' || schema.type === 'number') return '2000000000';
  if (/project/.test(param)) return '2000000000';
  return randomUUID();
}

/** Makes an asynchronous query (below) and waits for it to end, so that its row changes no more. */
const asyncQuery = (retrieve: OperationId) => ({
  body: (example: unknown) => ({ ...(example as object), refresh: 'force_async' }),
  async settle(ctx: TestContext, key: string, params: Record<string, string | number>, id: string | number) {
    for (let i = 0; i < 200; i++) {
      if ((await ctx.call(retrieve, { key, params: { ...params, id } })).status !== 202) return;
      await new Promise((r) => setTimeout(r, 25));
    }
  },
});

/**
 * Create operations whose example makes nothing a path can name: the Query API's example runs at once,
 * while `/query/{id}/` names an asynchronous query, made by the same operation with `refresh: "async"`.
 */
const CREATORS: Record<string, ReturnType<typeof asyncQuery>> = {
  query_create: asyncQuery('query_retrieve'),
  environments_query_create: asyncQuery('environments_query_retrieve'),
};

export class Fixtures {
  private cache = new Map<string, string | number>();
  private real = new Set<string>();
  /** Every object made here, for reports. */
  made = 0;

  constructor(
    private ctx: TestContext,
    private tenant: Tenant,
  ) {}

  /** The tenant's own value for `{organization_id}`/`{project_id}` (and the tenant itself on its own route). */
  tenantValue(op: Op, param: string): string | number | undefined {
    if (!op.tenant || op.tenant.param !== param) return undefined;
    return op.tenant.kind === 'organization' ? this.tenant.organization.id : this.tenant.project.id;
  }

  /** Forgets made objects, after a request that may have changed or removed them. */
  forget(): void {
    this.cache.clear();
  }

  /**
   * Values for every path parameter of `op` that name real objects of the tenant. With `fresh`, the
   * objects are made anew (for deletes, and for self routes that would otherwise remove the tenant).
   * Where no create operation exists or it refuses a minimal body, a nonexistent id stands in.
   */
  async pathValues(op: Op, fresh = false): Promise<Record<string, string | number>> {
    const out: Record<string, string | number> = {};
    for (const name of pathParams(op)) out[name] = await this.valueFor(op, name, fresh);
    return out;
  }

  async valueFor(op: Op, name: string, fresh = false): Promise<string | number> {
    const own = this.tenantValue(op, name);
    const value = own !== undefined && !(op.tenant?.self && fresh) ? own : await this.derive(op.path, name, fresh);
    if (value === undefined) return nonexistentValue(op, name);
    this.real.add(String(value));
    return value;
  }

  /** Whether `value` names an object that exists (was made here or is the tenant), not a stand-in. */
  isReal(value: string | number): boolean {
    return this.real.has(String(value));
  }

  private async derive(path: string, name: string, fresh: boolean): Promise<string | number | undefined> {
    const cacheKey = `${path.slice(0, path.indexOf(`{${name}}`))}{${name}}`;
    if (!fresh && this.cache.has(cacheKey)) return this.cache.get(cacheKey);
    const creator = creatorOf(path, name);
    if (!creator) return undefined;
    const params: Record<string, string | number> = {};
    for (const p of pathParams(creator)) params[p] = await this.valueFor(creator, p, false);
    const special = CREATORS[creator.operationId];
    const body = special ? special.body(exampleBody(creator)) : exampleBody(creator);
    const res = await this.ctx.call(creator.operationId, { key: this.tenant.key, params, body });
    if (res.status >= 300) return undefined;
    this.made++;
    const id = idFromCreated(res.body, name);
    if (special && id !== undefined) await special.settle(this.ctx, this.tenant.key, params, id);
    // A fresh object is about to be removed, so later requests keep the shared one.
    if (id !== undefined && !fresh) this.cache.set(cacheKey, id);
    return id;
  }
}
