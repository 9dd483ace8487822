import { ApiError } from '../core/errors.js';
import { dateValue } from '../core/dates.js';
import { rejectNulInJson } from '../core/null-characters.js';

export const OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
  'is_date_exact',
] as const;
export type Operator = (typeof OPERATORS)[number];
export type Scalar = string | number | boolean;

export type FilterNode =
  | {
      kind: 'property';
      key: string;
      type: 'event' | 'person';
      operator: Operator;
      value: Scalar | Scalar[] | undefined;
    }
  | { kind: 'group'; op: 'AND' | 'OR'; values: FilterNode[] };

const NUMERIC = new Set<Operator>(['gt', 'gte', 'lt', 'lte']);
const DATES = new Set<Operator>(['is_date_before', 'is_date_after', 'is_date_exact']);
const MAX_DEPTH = 8;

const bad = (detail: string) => ApiError.validation('properties', detail);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

function parseNode(raw: unknown, depth: number): FilterNode {
  if (depth > MAX_DEPTH) throw bad(`Property groups may be nested at most ${MAX_DEPTH} deep.`);
  if (!isObject(raw)) throw bad('Each property filter must be an object.');
  if (raw.type === 'AND' || raw.type === 'OR') {
    if (!Array.isArray(raw.values)) throw bad(`A property group needs a list of "values".`);
    return { kind: 'group', op: raw.type, values: raw.values.map((v) => parseNode(v, depth + 1)) };
  }
  if (typeof raw.key !== 'string' || !raw.key) throw bad('Each property filter needs a "key".');
  const type: unknown = raw.type ?? 'event';
  if (type !== 'event' && type !== 'person') {
    throw bad(`Property filter type "${String(type)}" is not supported; supported types: event, person.`);
  }
  const operator = (raw.operator ?? 'exact') as Operator;
  if (!OPERATORS.includes(operator)) {
    throw bad(`Operator "${String(raw.operator)}" is not supported; supported operators: ${OPERATORS.join(', ')}.`);
  }
  const node: Extract<FilterNode, { kind: 'property' }> = {
    kind: 'property',
    key: raw.key,
    type,
    operator,
    value: undefined,
  };
  if (operator === 'is_set' || operator === 'is_not_set') return node;
  const value = raw.value;
  const list = Array.isArray(value) ? value : [value];
  if (value === undefined || value === null || !list.length || !list.every(isScalar)) {
    throw bad(
      `Property filter "${raw.key}" needs a value (a string, number or ` +
        `boolean${operator === 'exact' || operator === 'is_not' ? ', or a list of them' : ''}).`,
    );
  }
  if (Array.isArray(value) && operator !== 'exact' && operator !== 'is_not') {
    if (value.length !== 1) throw bad(`Operator "${operator}" takes a single value.`);
  }
  const single = list[0]!;
  if (NUMERIC.has(operator) && (single === '' || typeof single === 'boolean' || !Number.isFinite(Number(single)))) {
    throw bad(`Operator "${operator}" needs a number; got ${JSON.stringify(single)}.`);
  }
  if (DATES.has(operator) && !dateValue(single)) {
    throw bad(`Operator "${operator}" needs an ISO 8601 date; got ${JSON.stringify(single)}.`);
  }
  node.value =
    operator === 'exact' || operator === 'is_not' ? (Array.isArray(value) ? (value as Scalar[]) : single) : single;
  return node;
}

/**
 * The `properties` query parameter: a JSON list of filters (all must hold), or one group
 * `{"type": "AND"|"OR", "values": [...]}`. Anything unreadable is PostHog's "Properties are unparsable!".
 */
export function parsePropertyFilters(text: string | undefined): FilterNode | undefined {
  if (text === undefined || text === '') return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw bad('Properties are unparsable!');
  }
  rejectNulInJson('properties', raw);
  if (Array.isArray(raw))
    return raw.length ? { kind: 'group', op: 'AND', values: raw.map((v) => parseNode(v, 1)) } : undefined;
  if (isObject(raw)) return parseNode(raw, 0);
  throw bad('Properties are unparsable!');
}

/** Whether any filter reads person properties (the listing then joins persons). */
export function needsPersons(node: FilterNode | undefined): boolean {
  if (!node) return false;
  return node.kind === 'group' ? node.values.some(needsPersons) : node.type === 'person';
}

/**
 * A list of filters that arrived as JSON in a body (a batch export's `filters`): all must hold.
 * Problems are reported on `attr` with the same wording as the `properties` parameter's.
 */
export function parseFilterList(raw: unknown, attr: string): FilterNode | undefined {
  if (raw === null || raw === undefined) return undefined;
  try {
    if (!Array.isArray(raw)) throw bad('Filters must be a list of property filters.');
    return raw.length ? { kind: 'group', op: 'AND', values: raw.map((v) => parseNode(v, 1)) } : undefined;
  } catch (err) {
    if (err instanceof ApiError) throw ApiError.validation(attr, err.detail);
    throw err;
  }
}
