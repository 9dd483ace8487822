import type { FastifySchemaValidationError } from 'fastify';
import { ApiError } from '../core/errors.js';

type AjvError = FastifySchemaValidationError & {
  parentSchema?: Record<string, unknown>;
  data?: unknown;
};

/** The field path as PostHog names it: nested keys joined with `__`. */
function attrOf(error: AjvError): string | null {
  const parts = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') parts.push(String(error.params.missingProperty));
  return parts.length ? parts.join('__') : null;
}

function describeType(data: unknown): string {
  if (data === null) return 'NoneType';
  if (Array.isArray(data)) return 'list';
  if (typeof data === 'string') return 'str';
  if (typeof data === 'number') return Number.isInteger(data) ? 'int' : 'float';
  if (typeof data === 'boolean') return 'bool';
  return 'dict';
}

const FORMAT_MESSAGES: Record<string, string> = {
  uuid: 'Must be a valid UUID.',
  'date-time':
    'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].',
  date: 'Date has wrong format. Use one of these formats instead: YYYY-MM-DD.',
  email: 'Enter a valid email address.',
  uri: 'Enter a valid URL.',
};

/**
 * PostHog's own wording for a failed check: `x-error-detail` is either one message for every check
 * of the schema, or a map from ajv keyword to a message or `{code, detail}`.
 */
function customError(error: AjvError): { code: string; detail: string } | undefined {
  const custom = error.parentSchema?.['x-error-detail'];
  if (typeof custom === 'string') return { code: 'invalid_input', detail: custom };
  if (!custom || typeof custom !== 'object') return undefined;
  const entry = (custom as Record<string, unknown>)[error.keyword];
  if (typeof entry === 'string') return { code: 'invalid_input', detail: entry };
  if (entry && typeof entry === 'object') {
    const { code, detail } = entry as { code?: string; detail?: string };
    if (typeof detail === 'string') return { code: code ?? 'invalid_input', detail };
  }
  return undefined;
}

/**
 * Turns the first ajv failure into DRF's wording and codes. A schema may carry
 * `x-error-detail` ("Invalid scope: {value}"; `{property}` names a key `additionalProperties` refuses) for the
 * messages PostHog words itself; such an error
 * names the whole field, not an index inside it.
 */
export function validationErrorBody(errors: FastifySchemaValidationError[]): ApiError {
  const error = errors[0] as AjvError;
  let attr = attrOf(error);
  const custom = error.keyword === 'required' ? undefined : customError(error);
  if (custom) {
    attr = attr?.replace(/(__\d+)+$/, '') ?? null;
    const property = String((error.params as { additionalProperty?: unknown }).additionalProperty ?? '');
    const detail = custom.detail.replace('{value}', String(error.data)).replace('{property}', property);
    return ApiError.validation(attr, detail, custom.code);
  }
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return ApiError.required(attr ?? String(p.missingProperty));
    case 'enum':
      return ApiError.invalidChoice(attr ?? '', error.data);
    case 'type': {
      if (error.data === null) return ApiError.validation(attr, 'This field may not be null.', 'null');
      const type = String(p.type).split(',')[0];
      const messages: Record<string, [string, string]> = {
        integer: ['invalid_input', 'A valid integer is required.'],
        number: ['invalid_input', 'A valid number is required.'],
        boolean: ['invalid_input', 'Must be a valid boolean.'],
        string: ['invalid_input', 'Not a valid string.'],
        array: ['not_a_list', `Expected a list of items but got type "${describeType(error.data)}".`],
        object: ['invalid_input', `Invalid data. Expected a dictionary, but got ${describeType(error.data)}.`],
      };
      const [code, detail] = messages[type ?? ''] ?? ['invalid_input', 'Invalid value.'];
      return ApiError.validation(attr, detail, code);
    }
    case 'minLength':
      return Number(p.limit) === 1
        ? ApiError.validation(attr, 'This field may not be blank.', 'blank')
        : ApiError.validation(attr, `Ensure this field has at least ${p.limit} characters.`, 'min_length');
    case 'maxLength':
      return ApiError.validation(attr, `Ensure this field has no more than ${p.limit} characters.`, 'max_length');
    case 'minimum':
      return ApiError.validation(attr, `Ensure this value is greater than or equal to ${p.limit}.`, 'min_value');
    case 'maximum':
      return ApiError.validation(attr, `Ensure this value is less than or equal to ${p.limit}.`, 'max_value');
    case 'minItems':
      return Number(p.limit) === 1
        ? ApiError.validation(attr, 'This list may not be empty.', 'empty')
        : ApiError.validation(attr, `Ensure this field has at least ${p.limit} elements.`, 'min_length');
    case 'maxItems':
      return ApiError.validation(attr, `Ensure this field has no more than ${p.limit} elements.`, 'max_length');
    case 'format':
      return ApiError.validation(attr, FORMAT_MESSAGES[String(p.format)] ?? 'Enter a valid value.');
    default:
      return ApiError.validation(attr, error.message ? `Invalid value: ${error.message}.` : 'Invalid value.');
  }
}
