import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { spec } from '../../src/http/spec.js';
import type { OperationId } from '../../src/http/types.js';

export interface OperationInfo {
  method: string;
  path: string;
  operation: Record<string, any>;
}

const operations = new Map<string, OperationInfo>();
for (const [path, item] of Object.entries(spec.paths)) {
  for (const [method, operation] of Object.entries(item)) {
    if (typeof operation === 'object' && operation && 'operationId' in operation) {
      operations.set(String(operation.operationId), { method: method.toUpperCase(), path, operation });
    }
  }
}

export function operationInfo(operationId: OperationId): OperationInfo {
  const info = operations.get(operationId);
  if (!info) throw new Error(`No operation ${operationId} in the contract`);
  return info;
}

/**
 * OpenAPI 3.0's `nullable: true` next to `allOf`/`oneOf`/`anyOf`/`$ref` (or with no `type`, as
 * PostHog's export has it) allows null, but ajv applies the composed schemas to null too and refuses
 * it (or refuses the schema); spell such schemas as JSON Schema does.
 */
export function nullableComposition(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableComposition);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = nullableComposition(v);
  if (out.nullable === true && (out.allOf || out.oneOf || out.anyOf || out.$ref || !out.type)) {
    const { nullable: _, ...rest } = out;
    return { anyOf: [{ type: 'null' }, rest] };
  }
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true });
formats.default(ajv);
ajv.addSchema(nullableComposition(spec) as object, 'spec');

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function resolveResponse(response: any): any {
  while (response?.$ref) {
    const name = String(response.$ref).split('/').pop()!;
    response = spec.components.responses?.[name];
  }
  return response;
}

/**
 * Checks a response against the contract: its status must be documented for the operation, and its
 * body must match that status's schema for the response's media type. Returns a list of problems.
 */
export function validateResponse(
  operationId: OperationId,
  status: number,
  contentType: string | undefined,
  body: string,
): string[] {
  const { method, path, operation } = operationInfo(operationId);
  const responses = operation.responses ?? {};
  const declared = responses[String(status)] ?? responses.default;
  if (!declared) return [`${operationId}: status ${status} is not documented (body: ${body.slice(0, 300)})`];
  const response = resolveResponse(declared);
  const content = response.content as Record<string, unknown> | undefined;
  if (!content)
    return body.length ? [`${operationId}: status ${status} documents no body but got ${body.slice(0, 200)}`] : [];
  const mediaType = (contentType ?? '').split(';')[0]!.trim();
  if (!(mediaType in content)) return [`${operationId}: media type ${mediaType} is not documented for ${status}`];
  if (!/json/.test(mediaType)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [`${operationId}: body is not JSON: ${body.slice(0, 200)}`];
  }
  const ref =
    typeof declared.$ref === 'string'
      ? `spec${declared.$ref}/content/${escapePointer(mediaType)}/schema`
      : `spec#/paths/${escapePointer(path)}/${method.toLowerCase()}/responses/${status}` +
        `/content/${escapePointer(mediaType)}/schema`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  if (validate(parsed)) return [];
  return (validate.errors ?? []).map((e) => `${operationId} ${status}: ${e.instancePath || '(body)'} ${e.message}`);
}
