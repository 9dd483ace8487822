import type { components } from '../../generated/api.js';
import { serializeUserBasic } from '../users/serialize.js';
import type { HogFunctionView } from './queries.js';
import { presentMappings } from './mappings.js';
import { templateById } from './templates/index.js';

type Schemas = components['schemas'];

const SECRET = { secret: true };

function minimal({ fn, creator }: HogFunctionView): Schemas['HogFunctionMinimal'] {
  return {
    id: fn.id,
    type: fn.type,
    name: fn.name,
    description: fn.description,
    created_at: fn.created_at.toISOString(),
    created_by: creator?.id ? serializeUserBasic(creator) : null,
    updated_at: fn.updated_at.toISOString(),
    enabled: fn.enabled,
    hog: fn.hog,
    filters: fn.filters,
    icon_url: fn.icon_url,
    template: templateById(fn.template_id) ?? null,
    status: { state: 1, tokens: 0 },
    execution_order: fn.execution_order,
  };
}

export const serializeHogFunctionMinimal = minimal;

/** The full shape; a secret input that has a value is answered as `{"secret": true}`, never the value. */
export function serializeHogFunction(view: HogFunctionView): Schemas['HogFunction'] {
  const { fn } = view;
  const inputs: Record<string, Record<string, unknown>> = { ...fn.inputs };
  for (const key of Object.keys(fn.encrypted_inputs)) inputs[key] = SECRET;
  return {
    ...minimal(view),
    filters: fn.filters,
    bytecode: fn.bytecode ?? null,
    transpiled: null,
    inputs_schema: fn.inputs_schema as Schemas['HogFunction']['inputs_schema'],
    inputs,
    // Stored only as the request schema's HogFunctionMasking (ttl and hash required) with its bytecode added.
    masking: (fn.masking as Schemas['HogFunctionMasking'] | null) ?? null,
    mappings: presentMappings(fn.mappings) as Schemas['HogFunction']['mappings'],
  };
}
