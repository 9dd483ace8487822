// PostHog's own response schemas for the insight kinds (the published schema copy kept beside the
// repository): an answer that PostHog's front end would misread fails here.
import { existsSync, readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { nullableComposition } from '../helpers/spec-validator.js';

const schemaPath = new URL('../../../shared/reference/posthog-schema/posthog-current.json', import.meta.url);

let ajv: Ajv | undefined;

/** A validator for PostHog's component schema `name`, or undefined when the copy is absent. */
export function posthogValidator(name: string): ValidateFunction | undefined {
  if (!existsSync(schemaPath)) return undefined;
  if (!ajv) {
    ajv = new Ajv({ strict: false, allErrors: true });
    formats.default(ajv);
    ajv.addSchema(nullableComposition(JSON.parse(readFileSync(schemaPath, 'utf8'))) as object, 'posthog');
  }
  return ajv.getSchema(`posthog#/components/schemas/${name}`);
}
