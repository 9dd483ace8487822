// The contract as data for tests that must cover every operation without naming them: the fuzzer and
// the tenant matrix. Everything here is derived from generated/openapi.json, so an operation added to
// the spec is covered the moment it exists.
import { randomUUID } from 'node:crypto';
import { spec } from '../../src/http/spec.js';
import type { OperationId } from '../../src/http/types.js';

export type Schema = Record<string, any>;

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Schema;
  /** A parameter whose value is JSON text (declared with `content: application/json`, as PostHog's `properties`). */
  json?: boolean;
}

/** A parameter with its schema, taken from its JSON content when it has one. */
function paramOf(node: unknown): Param {
  const p = deref<Param & { content?: Record<string, { schema?: Schema }> }>(node);
  if (p.schema) return p;
  return {
    ...p,
    schema: deref(p.content?.['application/json']?.schema) ?? {},
    json: Boolean(p.content?.['application/json']),
  };
}

export interface Op {
  operationId: OperationId;
  method: string;
  path: string;
  params: Param[];
  /** The JSON request body schema, resolved one level; undefined when the operation takes no body. */
  body?: Schema;
  bodyRequired: boolean;
  /** The scope the operation requires; null for public operations. */
  scope: string | null;
  /** Which tenant the path names, mirroring the server's routing rule. */
  tenant: { kind: 'organization' | 'project'; param: string; self: boolean } | null;
  raw: Schema;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Follows `$ref`s into the bundled document. */
export function deref<T = Schema>(node: any): T {
  let seen = 0;
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    const parts = String(node.$ref).replace(/^#\//, '').split('/');
    node = parts.reduce((acc: any, p) => acc?.[p.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
    if (++seen > 50) throw new Error('reference cycle');
  }
  return node as T;
}

function tenantOf(path: string): Op['tenant'] {
  const m = /^\/api\/(organizations|projects|environments)\/\{(\w+)\}\//.exec(path);
  if (!m) return null;
  return { kind: m[1] === 'organizations' ? 'organization' : 'project', param: m[2]!, self: m[2] === 'id' };
}

export const operations: Op[] = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, raw]) => {
      const op = raw as Schema;
      const params = [...((item as Schema).parameters ?? []), ...(op.parameters ?? [])].map(paramOf);
      const content = deref(op.requestBody)?.content?.['application/json'];
      const security = (op.security ?? spec.security ?? []) as Record<string, string[]>[];
      const scope = security.find((s) => 'PersonalAPIKeyAuth' in s)?.PersonalAPIKeyAuth?.[0] ?? null;
      return {
        operationId: op.operationId as OperationId,
        method: method.toUpperCase(),
        path,
        params,
        body: content ? deref(content.schema) : undefined,
        bodyRequired: Boolean(deref(op.requestBody)?.required),
        scope,
        tenant: tenantOf(path),
        raw: op,
      };
    }),
);

export const byId = new Map(operations.map((op) => [op.operationId, op]));

export const allScopes: string[] = deref<Schema>(spec.components.schemas?.Scope).enum;

/** Path parameters of `op` in the order they appear in its path. */
export function pathParams(op: Op): string[] {
  return [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
}

/** The operation that creates what `{param}` of `path` names: POST on the collection just before it. */
export function creatorOf(path: string, param: string): Op | undefined {
  const at = path.indexOf(`{${param}}`);
  if (at < 0) return undefined;
  const collection = path.slice(0, at);
  return operations.find((o) => o.method === 'POST' && o.path === collection);
}

/** Reads the id a creator's answer gives for `param`: `id`, or DRF's `user__uuid` lookup as `user.uuid`. */
export function idFromCreated(body: any, param: string): string | number | undefined {
  if (!body || typeof body !== 'object') return undefined;
  if (param.includes('__')) {
    const value = param.split('__').reduce((acc: any, k) => acc?.[k], body);
    return typeof value === 'string' || typeof value === 'number' ? value : undefined;
  }
  // An asynchronous query's 202 names it inside its `query_status`.
  const value = body.id ?? body.uuid ?? body.query_status?.id;
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}

/**
 * A small valid value of `schema`: required properties only, the first enum value or the default,
 * and strings that satisfy the common formats and length bounds. Used to create the objects that
 * path ids name, and as the body of requests whose refusal must not be a validation error.
 */
export function minimalValue(schema: Schema, depth = 0): unknown {
  const s = deref(schema);
  if (!s || depth > 8) return null;
  if (s.allOf) return Object.assign({}, ...s.allOf.map((x: Schema) => minimalValue(x, depth + 1)));
  if (s.oneOf || s.anyOf) return minimalValue((s.oneOf ?? s.anyOf)[0], depth + 1);
  if (s.default !== undefined) return s.default;
  if (s.enum) return s.enum.find((v: unknown) => v !== null) ?? s.enum[0];
  if (s.example !== undefined) return s.example;
  switch (s.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of s.required ?? []) {
        const prop = s.properties?.[name];
        if (prop && !deref(prop).readOnly) out[name] = minimalValue(prop, depth + 1);
      }
      return out;
    }
    case 'array':
      return Array.from({ length: s.minItems ?? 0 }, () => minimalValue(s.items ?? {}, depth + 1));
    case 'integer':
    case 'number':
      return Math.max(s.minimum ?? 1, s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -Infinity);
    case 'boolean':
      return false;
    case 'string':
      return minimalString(s);
    default:
      return s.properties ? minimalValue({ ...s, type: 'object' }, depth) : null;
  }
}

function minimalString(s: Schema): string {
  switch (s.format) {
    case 'uuid':
      return randomUUID();
    case 'date-time':
      return new Date().toISOString();
    case 'date':
      return new Date().toISOString().slice(0, 10);
    case 'email':
      return `fuzz-${randomUUID().slice(0, 8)}@example.com`;
    case 'uri':
    case 'url':
      return 'https://example.com/';
  }
  const base = `fuzz ${randomUUID().slice(0, 8)}`;
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? Infinity;
  return base.padEnd(min, 'x').slice(0, max);
}

/** Fills `{name}` segments of `path`, percent-encoding each value except those named in `raw`. */
export function fillPath(
  path: string,
  values: Record<string, string | number>,
  raw: ReadonlySet<string> = new Set(),
): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${path}: no value for {${name}}`);
    if (raw.has(name)) return String(value);
    // An unpaired surrogate cannot be percent-encoded; a URL can only carry its replacement.
    return encodeURIComponent((String(value) as string & { toWellFormed(): string }).toWellFormed());
  });
}

/** A scope that has nothing to do with `scope` (another object), for "key without the scope" cases. */
export function unrelatedScope(scope: string): string {
  const object = scope.split(':')[0];
  return allScopes.find((s) => s !== '*' && s.split(':')[0] !== object && !s.startsWith('user:'))!;
}
