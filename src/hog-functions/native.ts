// The transformations of our own templates, as plain code. A stored function whose bytecode is exactly a
// template's compiled program runs this instead of a VM run per event: PostHog's VM converts the whole event
// into Hog values and walks it to count its memory on every push, which made one `template-set-properties`
// cost as much as ingesting the event. Each implementation answers what the VM answers for the same program
// and inputs (test/hog-functions/native.test.ts runs both side by side); an event or input it cannot answer
// for exactly gets `undefined`, and the VM runs as before.
import { createHash } from 'node:crypto';
import { compileProgram } from './compile.js';
import { dropEvents, hashProperties, removeProperties, setProperties } from './templates/transformations.js';

type Json = Record<string, unknown>;

/** The program's answer: a new `properties` for the event, or null to drop it; undefined: run the VM. */
export type NativeProgram = (properties: Json, inputs: Json) => { properties: Json } | null | undefined;

/**
 * What the VM's memory count of a value would be allowed before this code steps aside: a thousandth of its 64 MB
 * limit, so neither that limit nor the 100 ms timeout can be reached by the VM on an event the code answers.
 */
const MAX_COST = 64 * 1024;

/** Markers the VM's value conversion treats specially (dates, closures): values carrying them go to the VM. */
const MARKERS = ['__hogDateTime__', '__hogDate__', '__hogClosure__', '__hogCallable__'];

/**
 * The VM's memory count of a JSON value (8 per value, plus a string's length), or -1 when the value holds
 * something the VM's conversions would change (a marker object, a `__proto__` key, a non-JSON value) or
 * counts past `budget`.
 */
export function plainCost(value: unknown, budget = MAX_COST): number {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return budget >= 8 ? 8 : -1;
  if (typeof value === 'string') return budget >= 8 + value.length ? 8 + value.length : -1;
  if (typeof value !== 'object') return -1;
  let cost = 8;
  if (Array.isArray(value)) {
    for (const v of value) {
      const c = plainCost(v, budget - cost);
      if (c < 0) return -1;
      cost += c;
    }
    return cost;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return -1;
  for (const key in value) {
    if (key === '__proto__' || MARKERS.includes(key)) return -1;
    const c = plainCost((value as Json)[key], budget - cost - 8 - key.length);
    if (c < 0) return -1;
    cost += 8 + key.length + c;
  }
  return cost;
}

const isDict = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** A copy of a plain JSON value (the VM hands out copies, never the input's own objects). */
const copy = (v: unknown): unknown => (v !== null && typeof v === 'object' ? structuredClone(v) : v);

/** Both the event's properties and the inputs are plain, small JSON (see MAX_COST). */
const plain = (properties: Json, inputs: Json) => {
  const c = plainCost(properties);
  return c >= 0 && plainCost(inputs, MAX_COST - c) >= 0;
};

/** `template-set-properties`: each key of `inputs.properties` set on the event's properties. */
const setProgram: NativeProgram = (properties, inputs) => {
  const set = inputs.properties;
  if (!isDict(set) || !plain(properties, inputs)) return undefined;
  const out: Json = { ...properties };
  for (const key in set) out[key] = copy(set[key]);
  return { properties: out };
};

/** Hog's `trim(s)`: spaces only. */
const trimSpaces = (s: string) => {
  let start = 0;
  let end = s.length;
  while (s[start] === ' ') start++;
  while (end > start && s[end - 1] === ' ') end--;
  return s.slice(start, end);
};

/** `template-remove-properties`: the event's properties without the names of the comma list `inputs.properties`. */
const removeProgram: NativeProgram = (properties, inputs) => {
  const list = inputs.properties;
  if (typeof list !== 'string' || !plain(properties, inputs)) return undefined;
  const names = new Set(list.split(',').map(trimSpaces));
  const out: Json = {};
  for (const key in properties) if (!names.has(key)) out[key] = properties[key];
  return { properties: out };
};

/**
 * `template-hash-properties`: each named property holding a string replaced by the SHA-256 of it followed by the
 * salt (null ones kept); a named property holding another value is the VM's to print as Hog prints it.
 */
const hashProgram: NativeProgram = (properties, inputs) => {
  const list = inputs.properties;
  const salt = inputs.salt ?? '';
  if (typeof list !== 'string' || typeof salt !== 'string' || !plain(properties, inputs)) return undefined;
  const names = new Set(list.split(',').map(trimSpaces));
  const out: Json = { ...properties };
  for (const key in properties) {
    const value = properties[key];
    if (!names.has(key) || value === null) continue;
    if (typeof value !== 'string') return undefined;
    out[key] = createHash('sha256')
      .update(value + salt)
      .digest('hex');
  }
  return { properties: out };
};

/** `template-drop-events`: `return null`, whatever the event. */
const dropProgram: NativeProgram = () => null;

const IMPLEMENTED: [code: string, program: NativeProgram][] = [
  [setProperties.code, setProgram],
  [removeProperties.code, removeProgram],
  [dropEvents.code, dropProgram],
  [hashProperties.code, hashProgram],
];

let programs: Promise<Map<string, NativeProgram>> | undefined;

/** The templates' programs keyed by their compiled bytecode's JSON, compiled once per process. */
const compiled = () =>
  (programs ??= Promise.all(
    IMPLEMENTED.map(async ([code, program]) => [JSON.stringify(await compileProgram(code, 'transformation')), program]),
  ).then((entries) => new Map(entries as [string, NativeProgram][])));

/** The plain-code twin of a transformation's bytecode, when it is one of the templates above unchanged. */
export async function nativeProgramOf(type: string, bytecode: unknown): Promise<NativeProgram | null> {
  if (type !== 'transformation' || !Array.isArray(bytecode)) return null;
  return (await compiled()).get(JSON.stringify(bytecode)) ?? null;
}
