import type { components } from '../../../generated/api.js';

/** A built-in template in PostHog's shape (HogFunctionTemplate): Hog source in `code`, inputs to fill in. */
export type HogFunctionTemplate = components['schemas']['HogFunctionTemplate'];
type InputSchema = HogFunctionTemplate['inputs_schema'][number];

type Draft = Omit<
  HogFunctionTemplate,
  'code_language' | 'free' | 'mapping_templates' | 'masking' | 'filters' | 'status' | 'inputs_schema'
> &
  Partial<Pick<HogFunctionTemplate, 'filters' | 'masking' | 'status'>> & {
    inputs_schema: (Omit<Partial<InputSchema>, 'type'> & Pick<InputSchema, 'key'> & { type: string })[];
  };

export const template = (t: Draft): HogFunctionTemplate => ({
  code_language: 'hog',
  free: true,
  status: 'stable',
  filters: null,
  masking: null,
  mapping_templates: null,
  ...t,
  // PostHog's schema serializer fills these in; the API answers them filled in.
  inputs_schema: t.inputs_schema.map((i) => ({ required: false, secret: false, hidden: false, ...i }) as InputSchema),
  // Templates are written with an indented template literal; the stored code starts at its first line.
  code: t.code.replace(/^\n/, ''),
});
