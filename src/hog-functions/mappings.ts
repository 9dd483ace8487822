import { ApiError } from '../core/errors.js';
import type { SecretBox } from '../secrets/index.js';
import { compileFilters } from './compile.js';
import { openInputs, secretValues, storeInputs, type StoredInputs } from './inputs.js';

type Json = Record<string, unknown>;

/**
 * A destination's mapping as stored: PostHog's HogFunctionMapping (`name`, `inputs_schema`, `inputs`,
 * `filters`), its inputs compiled and its secret inputs sealed like the function's own, its filters compiled.
 */
export interface StoredMapping extends StoredInputs {
  name?: string;
  inputs_schema: Json[];
  filters: Json;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A write's mappings compiled (PostHog's HogFunctionMappingSerializer), each against its own inputs schema;
 * a secret input that the update omits, or sends as `{"secret": true}`, keeps the value stored at its index.
 */
export async function compileMappings(
  box: SecretBox,
  sent: unknown[],
  stored: StoredMapping[] | null | undefined,
  testAccounts: (filters: Json) => Promise<Json[]>,
): Promise<StoredMapping[]> {
  const out: StoredMapping[] = [];
  for (const [i, mapping] of sent.entries()) {
    if (!isObject(mapping)) throw ApiError.validation(`mappings__${i}`, 'Each mapping must be an object.');
    const schema = (Array.isArray(mapping.inputs_schema) ? mapping.inputs_schema : []) as Json[];
    const before = stored?.[i] ?? { inputs: {}, encrypted_inputs: {} };
    const inputs = await storeInputs(box, schema, (mapping.inputs ?? {}) as Json, before).catch((err: unknown) => {
      if (err instanceof ApiError) throw ApiError.validation(`mappings__${i}__${err.attr ?? 'inputs'}`, err.detail);
      throw err;
    });
    const filters = isObject(mapping.filters) ? mapping.filters : {};
    const compiled = await compileFilters(filters, await testAccounts(filters)).catch((err: unknown) => {
      if (err instanceof ApiError) throw ApiError.validation(`mappings__${i}__filters`, err.detail);
      throw err;
    });
    out.push({
      ...(typeof mapping.name === 'string' ? { name: mapping.name } : {}),
      inputs_schema: schema,
      ...inputs,
      filters: compiled,
    });
  }
  return out;
}

/** Mappings as answered: secret inputs as `{"secret": true}`, never their sealed text. */
export function presentMappings(mappings: unknown): Json[] | null {
  if (!Array.isArray(mappings)) return null;
  return (mappings as StoredMapping[]).map(({ encrypted_inputs, ...rest }) => ({
    ...rest,
    inputs: {
      ...rest.inputs,
      ...Object.fromEntries(Object.keys(encrypted_inputs ?? {}).map((k) => [k, { secret: true }])),
    },
  }));
}

/** A delivery's inputs: the function's, with its mapping's over them (PostHog's order), and every secret. */
export function mappedInputs(
  box: SecretBox,
  fn: StoredInputs & { mappings?: unknown },
  mapping: number | undefined,
): { inputs: Record<string, Json>; secrets: string[] } {
  const own = { inputs: openInputs(box, fn), secrets: secretValues(box, fn) };
  const m = mapping === undefined ? undefined : (fn.mappings as StoredMapping[] | null)?.[mapping];
  if (!m) return own;
  return {
    inputs: { ...own.inputs, ...openInputs(box, m) },
    secrets: [...own.secrets, ...secretValues(box, m)],
  };
}
