import { ApiError } from '../core/errors.js';
import type { SecretBox } from '../secrets/index.js';
import { compileInputValue } from './compile.js';

type Json = Record<string, unknown>;
export interface StoredInputs {
  inputs: Record<string, Json>;
  /** Secret inputs, each the sealed JSON text of its input item. */
  encrypted_inputs: Record<string, string>;
}

const invalid = (key: string, detail: string) =>
  new ApiError(400, 'validation_error', 'invalid_input', detail, `inputs__${key}`);

const isSecretMarker = (v: unknown) =>
  !!v && typeof v === 'object' && (v as Json).secret === true && !('value' in (v as Json));
const empty = (v: unknown) => v === undefined || v === null || v === '';

function checkType(key: string, type: unknown, value: unknown) {
  const bad = (what: string) => invalid(key, `Value must be a ${what}.`);
  if (type === 'string' && typeof value !== 'string') throw bad('string');
  if (type === 'number' && typeof value !== 'number') throw bad('number');
  if (type === 'boolean' && typeof value !== 'boolean') throw bad('boolean');
  if (type === 'dictionary' && (typeof value !== 'object' || value === null || Array.isArray(value)))
    throw bad('dictionary');
}

/**
 * PostHog's validate_inputs: each input the schema names is checked against its type and compiled
 * (strings are Hog templates); inputs the schema does not name are dropped. A secret input sent as
 * `{"secret": true}`, or left out of a write that does not replace it, keeps the stored value;
 * secrets are sealed with the server's key and never kept in `inputs`.
 */
export async function storeInputs(
  box: SecretBox,
  schema: Json[],
  incoming: Record<string, unknown>,
  stored: StoredInputs,
): Promise<StoredInputs> {
  const out: StoredInputs = { inputs: {}, encrypted_inputs: {} };
  for (const [order, item] of schema.entries()) {
    const key = String(item.key);
    const sent = incoming[key];
    if (item.secret && (sent === undefined || isSecretMarker(sent))) {
      if (stored.encrypted_inputs[key]) out.encrypted_inputs[key] = stored.encrypted_inputs[key];
      else if (stored.inputs[key]) out.encrypted_inputs[key] = box.seal(JSON.stringify(stored.inputs[key]));
      continue;
    }
    // An input never sent takes the schema's default, as PostHog's editor fills it in.
    const value =
      sent && typeof sent === 'object' ? (sent as Json).value : sent === undefined ? item.default : undefined;
    if (empty(value)) {
      if (item.required) throw invalid(key, 'This field is required.');
      continue;
    }
    checkType(key, item.type, value);
    const compiled: Json = { value, order };
    if (item.templating !== false && ['string', 'dictionary', 'json'].includes(String(item.type)))
      compiled.bytecode = await compileInputValue(value, `inputs__${key}`);
    if (item.secret) out.encrypted_inputs[key] = box.seal(JSON.stringify(compiled));
    else out.inputs[key] = compiled;
  }
  return out;
}

/** Every input item, secrets opened: for running the function, never for answering a request. */
export function openInputs(box: SecretBox, stored: StoredInputs): Record<string, Json> {
  const all: Record<string, Json> = { ...stored.inputs };
  for (const [key, sealed] of Object.entries(stored.encrypted_inputs)) all[key] = JSON.parse(box.open(sealed)) as Json;
  return all;
}

/** The secret values of a function, to be masked out of anything it logs. */
export function secretValues(box: SecretBox, stored: StoredInputs): string[] {
  return Object.values(stored.encrypted_inputs)
    .map((s) => (JSON.parse(box.open(s)) as Json).value)
    .flatMap((v) => (typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).map(String) : []))
    .filter((v) => v.length >= 4);
}
