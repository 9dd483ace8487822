// biome-ignore-all lint/correctness/noPrecisionLoss: numbers past 2^53 and past column ranges are the point
// fast-check arbitraries built from the contract's own JSON schemas: values the schema accepts, and
// values that break it in the ways clients do (wrong types, missing fields, unknown enum values, huge
// strings, deep nesting, odd unicode, bad uuids, out-of-range numbers, NUL and extreme numbers and
// dates inside JSON query parameters).
import fc from 'fast-check';
import { deref, minimalValue, type Schema } from './spec-ops.js';

const MAX_DEPTH = 4;

/** Strings that have broken servers: NUL, lone surrogates, BOM, bidi overrides, joiners, astral planes. */
export const oddStrings = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\ufeffbom',
  '\u202eevil\u202c',
  '👨‍👩‍👧‍👦',
  'e\u0301\u0301\u0301',
  '\uffff\ufffe',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '\r\n\t\v\f',
  "'; drop table users; --",
  '../../etc/passwd',
  '%00%ff',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as plain text on purpose
  '{{7*7}}${7*7}',
  ' ',
  '',
);

const anyString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 30, unit: 'grapheme' }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30, unit: 'binary' }) },
  { weight: 2, arbitrary: oddStrings },
);

/** Integers a schema without bounds accepts, including beyond 32 and 53 bits. */
const anyInteger = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -5, max: 1000 }) },
  { weight: 2, arbitrary: fc.integer() },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      2147483647,
      2147483648,
      -2147483649,
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      1e20,
    ),
  },
);

export function validString(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 40, Math.max(min, 40));
  switch (s.format) {
    case 'uuid':
      return fc.uuid();
    case 'date-time':
      return fc
        .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
        .map((d) => d.toISOString());
    case 'date':
      return fc
        .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 10));
    case 'email':
      return fc.emailAddress();
    case 'uri':
    case 'url':
      return fc.webUrl();
  }
  if (s.pattern)
    return fc
      .stringMatching(new RegExp(s.pattern))
      .filter((v) => v.length >= min && v.length <= (s.maxLength ?? Infinity));
  return fc.oneof(
    { weight: 5, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'grapheme' }) },
    { weight: 1, arbitrary: oddStrings.filter((v) => v.length >= min && v.length <= (s.maxLength ?? Infinity)) },
  );
}

/** A value that `schema` accepts (readOnly properties left out, as a client would). */
export function validArb(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema);
  if (!s) return fc.constant(null);
  if (depth > MAX_DEPTH) return fc.constant(minimalValue(s));
  let arb: fc.Arbitrary<unknown>;
  if (s.allOf) arb = validArb(Object.assign({}, ...s.allOf.map((x: Schema) => deref(x))), depth);
  else if (s.oneOf || s.anyOf) arb = fc.oneof(...(s.oneOf ?? s.anyOf).map((x: Schema) => validArb(x, depth + 1)));
  else if (s.enum) arb = fc.constantFrom(...(s.enum as unknown[]));
  else
    switch (s.type) {
      case 'string':
        arb = validString(s);
        break;
      case 'integer':
        arb =
          s.minimum !== undefined || s.maximum !== undefined
            ? fc.integer({ min: s.minimum ?? -(2 ** 31), max: s.maximum ?? 2 ** 31 - 1 })
            : anyInteger;
        break;
      case 'number':
        arb = fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum, max: s.maximum });
        break;
      case 'boolean':
        arb = fc.boolean();
        break;
      case 'array':
        arb = fc.array(validArb(s.items ?? {}, depth + 1), {
          minLength: s.minItems ?? 0,
          maxLength: Math.min(s.maxItems ?? 4, Math.max(s.minItems ?? 0, 4)),
        });
        break;
      default:
        arb = objectArb(s, depth);
    }
  return s.nullable ? fc.option(arb, { nil: null, freq: 6 }) : arb;
}

function writable(s: Schema): [string, Schema][] {
  return Object.entries((s.properties ?? {}) as Record<string, Schema>).filter(([, p]) => !deref(p).readOnly);
}

function objectArb(s: Schema, depth: number): fc.Arbitrary<unknown> {
  const props = writable(s);
  if (!props.length) {
    if (s.additionalProperties === false) return fc.constant({});
    // Free-form objects end up in JSON columns: keys and values include the odd strings too.
    return fc.dictionary(
      fc.oneof(fc.string({ maxLength: 12 }), oddStrings),
      fc.oneof(fc.jsonValue({ maxDepth: 2 }), oddStrings),
      {
        maxKeys: 4,
      },
    );
  }
  const model = Object.fromEntries(props.map(([name, p]) => [name, validArb(p, depth + 1)]));
  const required = ((s.required ?? []) as string[]).filter((r) => r in model);
  return fc.record(model, { requiredKeys: required });
}

/** A value of another JSON type than `schema` wants. */
export function wrongTypeArb(schema: Schema): fc.Arbitrary<unknown> {
  const s = deref(schema);
  const type = s.type ?? (s.properties ? 'object' : undefined);
  const candidates: fc.Arbitrary<unknown>[] = [];
  if (type !== 'string') candidates.push(anyString);
  if (type !== 'integer' && type !== 'number')
    candidates.push(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })));
  if (type === 'integer') candidates.push(fc.constantFrom(1.5, -0.25, 1e308, '12', '0x1f'));
  if (type !== 'boolean') candidates.push(fc.boolean(), fc.constantFrom('true', 'false', 0, 1));
  if (type !== 'array') candidates.push(fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }));
  if (type !== 'object')
    candidates.push(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }));
  if (!s.nullable) candidates.push(fc.constant(null));
  return fc.oneof(...candidates);
}

/** A JSON value nested `levels` deep, written out only when the request is serialised (see toJsonText). */
export class Deep {
  constructor(
    readonly levels: number,
    readonly kind: 'array' | 'object',
  ) {}
  render(): string {
    const [open, close] = this.kind === 'array' ? ['[', ']'] : ['{"a":', '}'];
    return `${open.repeat(this.levels)}"bottom"${close.repeat(this.levels)}`;
  }
}

/** Nested arrays or objects, far deeper than JSON.stringify itself could write. */
export function deepArb(): fc.Arbitrary<unknown> {
  return fc
    .record({
      levels: fc.oneof(fc.integer({ min: 50, max: 300 }), fc.integer({ min: 300, max: 100_000 })),
      kind: fc.constantFrom('array' as const, 'object' as const),
    })
    .map(({ levels, kind }) => new Deep(levels, kind));
}

/** JSON.stringify that writes Deep values out as text. */
export function toJsonText(value: unknown): string {
  const parts: string[] = [];
  const text =
    JSON.stringify(value, (_k, v) => (v instanceof Deep ? `\u0001DEEP${parts.push(v.render()) - 1}` : v)) ?? 'null';
  return parts.length ? text.replace(/"\\u0001DEEP(\d+)"/g, (_m, i: string) => parts[Number(i)]!) : text;
}

export const hugeString = fc
  .record({ n: fc.integer({ min: 1_000, max: 300_000 }), unit: fc.constantFrom('x', 'é', '😀', '\u0000', ' ') })
  .map(({ n, unit }) => unit.repeat(Math.ceil(n / unit.length)));

const badUuid = fc.oneof(
  fc.constantFrom(
    'not-a-uuid',
    '',
    '00000000-0000-0000-0000-00000000000g',
    '{00000000-0000-0000-0000-000000000000}',
    '0'.repeat(32),
  ),
  fc.uuid().map((u) => `${u}0`),
  fc.uuid().map((u) => u.slice(1)),
);

const badNumber = fc.constantFrom(-1, -2147483649, 2147483648, 9007199254740993, 1e20, 1e308, -1e308, 0.5, -0);

/** A mutation that makes `value` (valid for `schema`) wrong at this spot. */
function breakHere(s: Schema, value: unknown): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [wrongTypeArb(s), deepArb()];
  if (s.enum) options.push(fc.oneof(anyString, anyInteger).filter((v) => !s.enum.includes(v)));
  if (s.type === 'string' || !s.type) options.push(hugeString, oddStrings);
  if (s.format === 'uuid') options.push(badUuid);
  if (s.type === 'integer' || s.type === 'number') options.push(badNumber);
  if (s.type === 'array')
    options.push(fc.array(wrongTypeArb(s.items ?? {}), { minLength: 1, maxLength: 3 }), fc.constant([]));
  if (s.type === 'object' && value && typeof value === 'object' && !Array.isArray(value)) {
    const required = ((s.required ?? []) as string[]).filter((r) => r in (value as object));
    if (required.length) {
      options.push(
        fc.constantFrom(...required).map((r) => {
          const copy = { ...(value as Record<string, unknown>) };
          delete copy[r];
          return copy;
        }),
      );
    }
  }
  return fc.oneof(...options);
}

/**
 * A value `schema` rejects (or, for unknown extra fields, one it ignores): a valid value broken at
 * the root or at one property, possibly nested.
 */
export function invalidArb(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema);
  return validArb(s, depth).chain((value) => {
    const props = writable(s);
    const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
    if (!isObject || !props.length || depth >= MAX_DEPTH) return breakHere(s, value);
    const spot = fc.constantFrom(...props);
    return fc.oneof(
      { weight: 1, arbitrary: breakHere(s, value) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.string({ minLength: 1, maxLength: 20 }), fc.jsonValue({ maxDepth: 2 }))
          .map(([k, v]) => ({ ...(value as object), [k]: v })),
      },
      {
        weight: 4,
        arbitrary: spot.chain(([name, prop]) => {
          const p = deref(prop);
          const current = (value as Record<string, unknown>)[name] ?? minimalValue(p);
          const broken = p.type === 'object' || p.properties ? invalidArb(p, depth + 1) : breakHere(p, current);
          return broken.map((b) => ({ ...(value as object), [name]: b }));
        }),
      },
    );
  });
}

/** Numbers at and past what integer, numeric and timestamp columns hold, and fractions where integers go. */
const extremeNumber = fc.constantFrom(
  1.5,
  -0.5,
  1e308,
  -1e308,
  5e-324,
  2147483648,
  -2147483649,
  9007199254740993,
  1e23,
  -99999999999,
);

/** Dates past year 1-9999 and relative dates (`-7d`) whose amounts overflow, as PostHog's date parameters take them. */
export const extremeDate = fc.oneof(
  fc.constantFrom(
    '99999-01-01',
    '0000-01-01',
    '-271821-04-20',
    '275760-09-13T00:00:00Z',
    '2024-13-45',
    '9999-12-31T23:59:59+14:00',
  ),
  fc
    .tuple(
      fc.constantFrom('1', '99999999999', '99999999999999999999', '9'.repeat(400)),
      fc.constantFrom('h', 'd', 'w', 'm', 'y'),
    )
    .map(([n, unit]) => `-${n}${unit}`),
);

/** A JSON scalar of the kinds that reach SQL from inside a JSON query parameter. */
const oddScalar = fc.oneof(oddStrings, extremeNumber, extremeDate, fc.boolean());

/** A HogQL-looking condition or expression whose literals are odd: NUL, extreme numbers, dates past year 9999. */
const oddExpression = fc
  .tuple(
    fc.constantFrom(
      'team_id',
      'timestamp',
      'created_at',
      'event',
      'distinct_id',
      'uuid',
      'person_id',
      'properties.plan',
      'properties.`a\u0000`',
      'properties.$browser',
    ),
    fc.constantFrom('=', '!=', '>', '<=', 'LIKE', 'ILIKE', 'IN'),
    fc.oneof(
      oddStrings.map((v) => `'${v.replace(/'/g, "''")}'`),
      extremeNumber.map(String),
      extremeDate.map((v) => `'${v}'`),
      fc.constantFrom('99999999999999999999999', 'null', "('a', '\u0000')", 'now()'),
    ),
  )
  .map(([field, op, literal]) => `${field} ${op} ${literal}`);

/**
 * Values of the parameters that carry JSON (property filters, HogQL `select`/`where`, name lists,
 * orderings): JSON.stringify writes a NUL as the escape `\u0000`, which passes any check of the raw
 * text, and numbers and dates stay whatever size the client chose.
 */
export const jsonQueryValue = fc.oneof(
  fc
    .array(
      fc.record(
        {
          key: fc.oneof(oddStrings, fc.constantFrom('browser', '$browser', 'n', 'plan')),
          value: fc.oneof(oddScalar, fc.array(oddScalar, { maxLength: 3 })),
          operator: fc.constantFrom(
            'exact',
            'is_not',
            'icontains',
            'not_icontains',
            'regex',
            'not_regex',
            'gt',
            'lt',
            'is_date_after',
            'is_set',
          ),
          type: fc.constantFrom('event', 'person'),
        },
        { requiredKeys: ['key', 'value'] },
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((filters) => JSON.stringify(filters)),
  fc.array(oddExpression, { minLength: 1, maxLength: 3 }).map((list) => JSON.stringify(list)),
  fc.array(oddScalar, { minLength: 1, maxLength: 3 }).map((list) => JSON.stringify(list)),
  fc.dictionary(oddStrings, oddScalar, { minKeys: 1, maxKeys: 3 }).map((o) => JSON.stringify(o)),
);

/** Query values as a client could send them: valid ones, and ones that break the parameter's schema. */
export function queryValueArb(schema: Schema, json = false): fc.Arbitrary<string | string[]> {
  const s = deref(schema);
  const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  if (json) {
    return fc.oneof(
      { weight: 2, arbitrary: validArb(s).map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: invalidArb(s).map((v) => toJsonText(v)) },
      { weight: 1, arbitrary: fc.constantFrom('', '[', '{}', 'null', '"x"', '[[[]]]', '1e999') },
      { weight: 4, arbitrary: jsonQueryValue },
    );
  }
  const valid = validArb(s).map((v) => (Array.isArray(v) ? v.map(asText) : asText(v)));
  const invalid = fc.oneof(
    fc.constantFrom(
      '-1',
      '-999999',
      '0',
      'abc',
      '',
      '1e309',
      '99999999999999999999',
      '9223372036854775808',
      '0x10',
      ' 1',
      'NaN',
      'null',
      '[]',
      '1.5',
    ),
    oddStrings,
    hugeString.map((v) => v.slice(0, 5000)),
    fc.array(fc.constantFrom('1', 'a', '-1', ''), { minLength: 2, maxLength: 4 }),
  );
  // Any free-text parameter may be one that carries JSON or a date.
  const freeText = (s.type === 'string' || !s.type) && !s.enum && !s.format;
  return fc.oneof(
    { weight: 2, arbitrary: valid },
    { weight: 3, arbitrary: invalid },
    { weight: freeText ? 3 : 0, arbitrary: jsonQueryValue },
    { weight: freeText ? 1 : 0, arbitrary: extremeDate },
  );
}

/** Path segment values that name nothing or break the parameter's format. */
export const badPathValue = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '1.5',
    '2147483648',
    '99999999999999999999',
    'abc',
    'null',
    '@me',
    '@current2',
    '%',
    ' ',
    '-',
    'x'.repeat(3000),
  ),
  fc.uuid(),
  oddStrings.filter((v) => v.length > 0),
  fc.integer({ min: 100_000_000, max: 2_000_000_000 }).map(String),
);
