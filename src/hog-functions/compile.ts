import { compileExpr, compileHog, compileTemplate } from '../hog/compile.js';
import { ApiError } from '../core/errors.js';
import { compileFilters as compileFilterBytecode } from '../hog/filters.js';
import type { PropertyFilter } from '../hog/properties.js';

export type Bytecode = unknown[];

const invalid = (attr: string, detail: string) => new ApiError(400, 'validation_error', 'invalid_input', detail, attr);

/** Functions a destination may call beyond the VM's library (PostHog's compile_hog). */
const supportedFunctions = (type: string) => (type === 'destination' ? ['fetch', 'postHogCapture'] : []);

/** A function's program; a 400 on `hog` in PostHog's wording when it does not compile. */
export async function compileProgram(hog: string, type: string): Promise<Bytecode> {
  try {
    const compiled = await compileHog(hog, { supportedFunctions: supportedFunctions(type) });
    if (compiled.errors.length) throw new Error(compiled.errors[0]?.message);
    return compiled.bytecode;
  } catch {
    throw invalid('hog', 'Hog code has errors.');
  }
}

/**
 * An input's value as PostHog's generate_template_bytecode compiles it: each string is a template
 * (`{event.properties.x}` parts are Hog), objects and arrays are walked, anything else stays as it is.
 */
export async function compileInputValue(value: unknown, attr: string): Promise<unknown> {
  if (typeof value === 'string') {
    try {
      // PostHog's parse_string_template parses the text after an opening F' (no closing quote).
      return (await compileTemplate(value)).bytecode;
    } catch (err) {
      throw invalid(attr, `Invalid template: ${(err as Error).message}`);
    }
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => compileInputValue(v, attr)));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await compileInputValue(v, attr);
    return out;
  }
  return value;
}

/**
 * The filters with their `bytecode` (PostHog's compile_filters_bytecode), the project's test account filters
 * included when `filter_test_accounts` is on; a filter that does not compile is a 400 on `filters`.
 */
export async function compileFilters(
  filters: Record<string, unknown>,
  testAccountFilters: Record<string, unknown>[] = [],
): Promise<Record<string, unknown>> {
  const { bytecode: _old, bytecode_error: _err, ...rest } = filters;
  const compiled = await compileFilterBytecode(rest, { testAccountFilters: testAccountFilters as PropertyFilter[] });
  if (compiled.bytecode_error) throw invalid('filters', `Invalid filters: ${compiled.bytecode_error}`);
  return compiled;
}

/** The masking hash expression's bytecode (PostHog compiles `hash` as a template). */
export async function compileMasking(masking: Record<string, unknown>): Promise<Record<string, unknown>> {
  return { ...masking, bytecode: await compileInputValue(String(masking.hash ?? ''), 'masking__hash') };
}
