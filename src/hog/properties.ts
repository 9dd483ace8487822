// A property filter ({key, value, operator, type}) as a HogQL AST, following PostHog's property_to_expr
// (posthog/hogql/property.py) in event scope: the shapes a hog function's filters hold.
import { HogCompileError } from './errors.js';
import type { AstNode } from './parse.js';
import { parseHog } from './parse.js';

export interface PropertyFilter {
  key?: unknown;
  value?: unknown;
  operator?: string | null;
  type?: string;
  group_type_index?: number | null;
  negation?: boolean;
  [other: string]: unknown;
}

export interface PropertyContext {
  /** Whether a property is defined as Boolean (PostHog reads its property definitions), so 'true' means true. */
  isBoolean?: (type: string, key: string, groupTypeIndex?: number | null) => boolean;
  /** "Now" for relative dates (`-7d`) of the date operators; PostHog resolves them when it compiles. */
  now?: Date;
}

const n = (kind: string, fields: Record<string, unknown>): AstNode => ({ node: kind, ...fields });
const constant = (value: unknown): AstNode => n('Constant', { value });
const fieldOf = (...chain: (string | number)[]): AstNode => n('Field', { chain });
const call = (name: string, ...args: AstNode[]): AstNode => n('Call', { name, args });
const compare = (op: string, left: AstNode, right: AstNode): AstNode => n('CompareOperation', { op, left, right });

/** Property types PostHog's Property model accepts; another type makes the filter a no-op, as there. */
const VALID_TYPES = new Set([
  'event',
  'event_metadata',
  'feature',
  'person',
  'cohort',
  'element',
  'static-cohort',
  'dynamic-cohort',
  'precalculated-cohort',
  'group',
  'recording',
  'log_entry',
  'behavioral',
  'session',
  'hogql',
  'data_warehouse',
  'data_warehouse_person_property',
  'error_tracking_issue',
  'log',
  'log_attribute',
  'log_resource_attribute',
  'revenue_analytics',
  'flag',
  'workflow_variable',
]);

/** Python's str() of a filter value, since PostHog builds LIKE patterns with it. */
function pyStr(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null || value === undefined) return 'None';
  return String(value);
}

function multiSearch(expr: AstNode, values: unknown[]): AstNode {
  const array = n('Array', { exprs: values.map((v) => constant(pyStr(v))) });
  return call('multiSearchAnyCaseInsensitive', call('toString', expr), array);
}

function forceDateTime(expr: AstNode): AstNode {
  if (expr.node === 'Constant' && typeof expr.value === 'string') return call('toDateTime', expr);
  return call('toDateTime', call('toString', expr));
}

const pad = (x: number) => String(x).padStart(2, '0');

/** `-7d`-style values resolved to a UTC wall clock (`YYYY-MM-DD HH:MM:SS`); other values as they are. */
function resolveDate(value: unknown, ctx: PropertyContext): unknown {
  if (typeof value !== 'string') return value;
  const m = /^(-?)([0-9]+)([hdwmqysHDWMQY])/.exec(value);
  if (!m) return value;
  const amount = Number(m[2]) * (m[1] === '-' ? -1 : 1);
  const d = new Date(ctx.now ?? Date.now());
  const unit = m[3]!;
  if (unit === 'h' || unit === 'H') d.setUTCHours(d.getUTCHours() + amount);
  else if (unit === 'M') d.setUTCMinutes(d.getUTCMinutes() + amount);
  else if (unit === 's' || unit === 'S') d.setUTCSeconds(d.getUTCSeconds() + amount);
  else {
    if (unit === 'd' || unit === 'D') d.setUTCDate(d.getUTCDate() + amount);
    else if (unit === 'w' || unit === 'W') d.setUTCDate(d.getUTCDate() + amount * 7);
    else if (unit === 'm') d.setUTCMonth(d.getUTCMonth() + amount);
    else if (unit === 'q' || unit === 'Q') d.setUTCMonth(d.getUTCMonth() + amount * 3);
    else d.setUTCFullYear(d.getUTCFullYear() + amount);
    d.setUTCHours(0, 0, 0, 0);
  }
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  return `${date} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

function boolValue(value: unknown, p: PropertyFilter, ctx: PropertyContext): unknown {
  const text = value === true ? 'true' : value === false ? 'false' : value;
  if (text !== 'true' && text !== 'false') return text;
  const boolean = ctx.isBoolean?.(p.type ?? 'event', String(p.key), p.group_type_index) ?? false;
  return boolean ? text === 'true' : text;
}

function betweenValues(value: unknown, operator: string): [unknown, unknown] {
  if (!Array.isArray(value) || value.length !== 2) {
    throw new HogCompileError(`${operator} operator requires a two-element array [min, max]`);
  }
  const [min, max] = value.map(Number) as [number, number];
  if (Number.isNaN(min) || Number.isNaN(max)) throw new HogCompileError(`${operator} operator requires numeric values`);
  if (min > max) {
    throw new HogCompileError(`${operator} operator requires min value to be less than or equal to max value`);
  }
  return [value[0], value[1]];
}

const SEMVER_OPS: Record<string, string> = {
  semver_eq: '==',
  semver_neq: '!=',
  semver_gt: '>',
  semver_gte: '>=',
  semver_lt: '<',
  semver_lte: '<=',
};
const SIMPLE_OPS: Record<string, string> = { lt: '<', gt: '>', lte: '<=', max: '<=', gte: '>=', min: '>=' };

function semverParts(value: string): [number, number, number] {
  const parts = value.split('-')[0]!.split('.');
  if (!parts[0]) throw new Error('Invalid semver format');
  const nums = [parts[0], parts[1] ?? '0', parts[2] ?? '0'].map((x) => {
    if (!/^\s*[+-]?\d+\s*$/.test(x)) throw new Error('Invalid semver format');
    return Number.parseInt(x, 10);
  });
  return nums as [number, number, number];
}

function semverBounds(operator: string, value: string): [string, string] {
  if (operator === 'semver_tilde') {
    const [major, minor, patch] = semverParts(value);
    if (value.split('-')[0]!.split('.').length < 2) return [`${major}.0.0`, `${major + 1}.0.0`];
    return [`${major}.${minor}.${patch}`, `${major}.${minor + 1}.0`];
  }
  if (operator === 'semver_caret') {
    const [major, minor, patch] = semverParts(value);
    const upper = major > 0 ? `${major + 1}.0.0` : minor > 0 ? `0.${minor + 1}.0` : `0.0.${patch + 1}`;
    return [`${major}.${minor}.${patch}`, upper];
  }
  const base = value.replace(/[.*]+$/, '');
  if (!base) throw new Error('Invalid wildcard pattern');
  const parts = base.split('-')[0]!.split('.');
  const nums = parts.slice(0, 3).map((x) => {
    if (!/^\s*[+-]?\d+\s*$/.test(x)) throw new Error('Invalid wildcard pattern');
    return Number.parseInt(x, 10);
  });
  if (parts.length === 1) return [`${parts[0]}.0.0`, `${nums[0]! + 1}.0.0`];
  if (parts.length === 2) return [`${parts[0]}.${parts[1]}.0`, `${parts[0]}.${nums[1]! + 1}.0`];
  return [`${parts[0]}.${parts[1]}.${parts[2]}.0`, `${parts[0]}.${parts[1]}.${nums[2]! + 1}.0`];
}

/** PostHog's _expr_to_compare_op. */
export function compareOp(expr: AstNode, value: unknown, operator: string, p: PropertyFilter, ctx: PropertyContext) {
  switch (operator) {
    case 'is_set':
      return compare('!=', expr, constant(null));
    case 'is_not_set':
      return compare('==', expr, constant(null));
    case 'icontains':
    case 'not_icontains': {
      const found = operator === 'icontains';
      if (Array.isArray(value) && value.length > 1) {
        return compare(found ? '>' : '==', multiSearch(expr, value), constant(0));
      }
      const single = Array.isArray(value) && value.length === 1 ? value[0] : value;
      return compare(found ? 'ilike' : 'not ilike', call('toString', expr), constant(`%${pyStr(single)}%`));
    }
    case 'icontains_multi':
    case 'not_icontains_multi': {
      const values = Array.isArray(value) ? value : [value];
      return compare(operator === 'icontains_multi' ? '>' : '==', multiSearch(expr, values), constant(0));
    }
    case 'regex':
      return call('ifNull', call('match', call('toString', expr), constant(value)), constant(0));
    case 'not_regex':
      return call('ifNull', call('not', call('match', call('toString', expr), constant(value))), constant(1));
    case 'exact':
      return compare('==', expr, constant(boolValue(value, p, ctx)));
    case 'is_not':
      return compare('!=', expr, constant(boolValue(value, p, ctx)));
    case 'is_date_exact':
    case 'is_date_before':
    case 'is_date_after': {
      const op = operator === 'is_date_exact' ? '==' : operator === 'is_date_before' ? '<' : '>';
      return compare(op, forceDateTime(expr), forceDateTime(constant(resolveDate(value, ctx))));
    }
    case 'between':
    case 'not_between': {
      const [min, max] = betweenValues(value, operator);
      if (operator === 'between') {
        return n('And', { exprs: [compare('>=', expr, constant(min)), compare('<=', expr, constant(max))] });
      }
      return n('Or', { exprs: [compare('<', expr, constant(min)), compare('>', expr, constant(max))] });
    }
    case 'in':
    case 'not_in': {
      if (!Array.isArray(value)) throw new HogCompileError('IN and NOT IN operators require a list of values');
      const array = n('Array', { exprs: value.map(constant) });
      return compare(operator === 'in' ? 'in' : 'not in', expr, array);
    }
    case 'semver_tilde':
    case 'semver_caret':
    case 'semver_wildcard': {
      const name = { semver_tilde: 'Tilde', semver_caret: 'Caret', semver_wildcard: 'Wildcard' }[operator];
      if (typeof value !== 'string') throw new HogCompileError(`${name} operator requires a semver string value`);
      let bounds: [string, string];
      try {
        bounds = semverBounds(operator, value);
      } catch {
        throw new HogCompileError(`${name} operator requires a valid semver string (e.g., '1.2.3')`);
      }
      const semver = (x: AstNode) => call('sortableSemver', x);
      return n('And', {
        exprs: [
          compare('>=', semver(expr), semver(constant(bounds[0]))),
          compare('<', semver(expr), semver(constant(bounds[1]))),
        ],
      });
    }
  }
  if (SIMPLE_OPS[operator]) return compare(SIMPLE_OPS[operator], expr, constant(value));
  if (SEMVER_OPS[operator]) {
    return compare(SEMVER_OPS[operator], call('sortableSemver', expr), call('sortableSemver', constant(value)));
  }
  throw new HogCompileError(`PropertyOperator ${operator} not implemented`);
}

/** The field a property reads in event scope. */
function propertyField(p: PropertyFilter): AstNode {
  const key = String(p.key);
  let chain: (string | number)[];
  if (p.type === 'person' && key === 'distinct_id') chain = ['person', 'pdi'];
  else if (p.type === 'person') chain = ['person', 'properties'];
  else if (p.type === 'group') chain = [`group_${p.group_type_index}`, 'properties'];
  else if (p.type === 'session') chain = ['session'];
  else if (p.type === 'event_metadata' || p.type === 'recording' || p.type === 'log_entry') chain = [];
  else chain = ['properties'];
  if (chain.length === 1 && chain[0] === 'properties' && key === '$elements_chain') return fieldOf('elements_chain');
  return fieldOf(...chain, key);
}

const PROPERTY_TYPES = new Set(['event', 'event_metadata', 'feature', 'person', 'group', 'behavioral', 'session']);
const NEGATIVE = new Set(['not_icontains', 'not_regex', 'is_not']);

/** PostHog's property_to_expr for a filter (or a list of them, ANDed) in event scope. */
export async function propertyToAst(property: unknown, ctx: PropertyContext = {}): Promise<AstNode> {
  if (Array.isArray(property)) {
    const exprs = await Promise.all(property.map((p) => propertyToAst(p, ctx)));
    if (exprs.length === 0) return constant(1);
    return exprs.length === 1 ? exprs[0]! : n('And', { exprs });
  }
  if (typeof property !== 'object' || property === null) {
    throw new HogCompileError('property_to_expr with property of this type not implemented');
  }
  const p = { type: 'event', ...(property as PropertyFilter) } as PropertyFilter & { type: string };
  // PostHog's Property model refuses these, and the filter is then left out (matches everything).
  if (p.key === undefined || !VALID_TYPES.has(p.type)) return constant(1);
  if (p.type === 'flag') return constant(1);
  if (p.type === 'hogql') return parseHog('expr', String(p.key));
  const operator = p.operator || 'exact';
  let value = p.value;
  if (PROPERTY_TYPES.has(p.type)) {
    const expr = propertyField(p);
    if (Array.isArray(value) && !['between', 'not_between', 'icontains', 'not_icontains'].includes(operator)) {
      if (value.length === 0) return constant(1);
      if (value.length === 1) value = value[0];
      else if (['exact', 'is_not', 'in', 'not_in'].includes(operator)) {
        const op = operator === 'exact' || operator === 'in' ? 'in' : 'not in';
        return compare(op, expr, n('Tuple', { exprs: (value as unknown[]).map(constant) }));
      } else {
        const exprs = await Promise.all((value as unknown[]).map((v) => propertyToAst({ ...p, value: v }, ctx)));
        return n(NEGATIVE.has(operator) ? 'And' : 'Or', { exprs });
      }
    }
    return compareOp(expr, value, operator, p, ctx);
  }
  if (p.type === 'element') {
    if (Array.isArray(value)) {
      if (value.length === 1) value = value[0];
      else {
        const exprs = await Promise.all(value.map((v) => propertyToAst({ ...p, value: v }, ctx)));
        return n(NEGATIVE.has(operator) ? 'And' : 'Or', { exprs });
      }
    }
    if (p.key === 'href') return compareOp(fieldOf('elements_chain_href'), value, operator, p, ctx);
    if (p.key === 'text') {
      const lambda = n('Lambda', { args: ['text'], expr: compareOp(fieldOf('text'), value, operator, p, ctx) });
      return call('arrayExists', lambda, fieldOf('elements_chain_texts'));
    }
    throw new HogCompileError(`property_to_expr for element ${String(p.key)} is not supported in real-time filters`);
  }
  if (p.type.endsWith('cohort')) {
    throw new HogCompileError(
      `Can't use cohorts in real-time filters. Please inline the relevant expressions (cohort id=${String(p.value)}).`,
    );
  }
  throw new HogCompileError(`The '${p.type}' property filter does not work in real-time filters`);
}
