// PostHog's own response schemas for the insight kinds (the published schema copy kept beside the
// repository): an answer that PostHog's front end would misread fails here.
import { existsSync, readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { nullableComposition } from '../helpers/spec-validator.js';

const schemaPath = new URL('../../../shared/reference/posthog-schema/posthog-current.json', import.meta.url);

let ajv: Ajv | undefined;

/**
 * The fields of PostHog's CachedQueryResponseMixin. PostHog answers a query with its kind's
 * Cached<Kind>QueryResponse: the kind's response plus these, a class its published schema does not carry.
 */
const CACHE_FIELDS = [
  'is_cached',
  'last_refresh',
  'next_allowed_client_refresh',
  'cache_target_age',
  'cache_key',
  'timezone',
  'query_status',
  'calculation_trigger',
];

/**
 * A validator for PostHog's component schema `name`, or undefined when the copy is absent. A
 * `<Kind>QueryResponse` is checked as its cached form: the answer without the cache fields.
 */
export function posthogValidator(name: string): ValidateFunction | undefined {
  const validate = schemaValidator(name);
  if (!validate || !name.endsWith('QueryResponse')) return validate;
  const cached = ((body: unknown) => {
    const rest = { ...(body as Record<string, unknown>) };
    for (const field of CACHE_FIELDS) delete rest[field];
    const ok = validate(rest);
    cached.errors = validate.errors;
    return ok;
  }) as ValidateFunction;
  return cached;
}

function schemaValidator(name: string): ValidateFunction | undefined {
  if (!existsSync(schemaPath)) return undefined;
  if (!ajv) {
    ajv = new Ajv({ strict: false, allErrors: true });
    formats.default(ajv);
    ajv.addSchema(nullableComposition(JSON.parse(readFileSync(schemaPath, 'utf8'))) as object, 'posthog');
  }
  return ajv.getSchema(`posthog#/components/schemas/${name}`);
}
