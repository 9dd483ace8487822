import { parsePropertyFilters } from '../events/filters.js';
import { QueryError, type Node, type Query, type Select } from '../hogql/index.js';
import { propertyFilterNode } from './events-query.js';
import { isoOf, wallClockAt, wallText } from './kinds/date-range.js';

/** PostHog's HogQLFilters, as far as this server applies them. */
export interface HogQLFilters {
  dateRange?: { date_from?: string | null; date_to?: string | null } | null;
  properties?: unknown[] | null;
  /** PostHog's filterTestAccounts: the project's test account filters join the conditions. */
  filterTestAccounts?: boolean | null;
  [field: string]: unknown;
}

/** PostHog's HogQLVariable, keyed by its id in a HogQLQuery's `variables`. */
export interface HogQLVariable {
  variableId?: string;
  code_name?: string;
  value?: unknown;
}

const at = 0;
const COMPARISONS = new Set(['=', '==', '!=', '<>', '<', '<=', '>', '>=']);
const RELATIVE = /^(-?\d+)?([hdwmqyM])(Start|End)?$/;

const instantOf = (local: string, timezone: string) => new Date(isoOf(local, timezone));

/**
 * A date of a HogQLFilters range as the instant it means, as PostHog's replace_filters reads it: an ISO
 * date or date-time (without an offset, in the project's timezone), or a relative date (`-7d`, `-24h`,
 * `-30M`, `mStart`, `-1dEnd`) from now in the project's timezone, whole days and longer units counted
 * from the start of the day.
 */
export function filterDate(text: string, timezone: string, now = new Date()): Date {
  const value = text.trim();
  const m = RELATIVE.exec(value);
  if (m) {
    const n = Number(m[1] ?? 0);
    const unit = m[2]!;
    if (unit === 'h' || unit === 'M') {
      const step = unit === 'h' ? 3_600_000 : 60_000;
      if (!m[3]) return new Date(now.getTime() + n * step);
    }
    // The project's wall clock now, whole seconds.
    const d = new Date(wallClockAt(now.getTime(), timezone));
    if (unit === 'h') d.setUTCHours(d.getUTCHours() + n, 0, 0, 0);
    else if (unit === 'M') d.setUTCMinutes(d.getUTCMinutes() + n, 0, 0);
    else {
      if (unit === 'd') d.setUTCDate(d.getUTCDate() + n);
      if (unit === 'w') d.setUTCDate(d.getUTCDate() + 7 * n);
      if (unit === 'm') d.setUTCMonth(d.getUTCMonth() + n);
      if (unit === 'q') d.setUTCMonth(d.getUTCMonth() + 3 * n);
      if (unit === 'y') d.setUTCFullYear(d.getUTCFullYear() + n);
      d.setUTCHours(0, 0, 0, 0);
      if (m[3] && unit === 'w') d.setUTCDate(d.getUTCDate() - d.getUTCDay());
      if (m[3] && (unit === 'm' || unit === 'q' || unit === 'y')) d.setUTCDate(1);
      if (m[3] && unit === 'q') d.setUTCMonth(d.getUTCMonth() - (d.getUTCMonth() % 3));
      if (m[3] && unit === 'y') d.setUTCMonth(0);
    }
    if (m[3] === 'End') {
      const span = {
        h: [0, 0, 1],
        M: [0, 0, 0],
        d: [1, 0, 0],
        w: [7, 0, 0],
        m: [0, 1, 0],
        q: [0, 3, 0],
        y: [0, 12, 0],
      };
      const [days, months, hours] = span[unit as keyof typeof span];
      if (unit === 'M') d.setUTCMinutes(d.getUTCMinutes() + 1);
      d.setUTCDate(d.getUTCDate() + days!);
      d.setUTCMonth(d.getUTCMonth() + months!);
      d.setUTCHours(d.getUTCHours() + hours!);
      d.setTime(d.getTime() - 1);
    }
    const local = wallText(d);
    return new Date(instantOf(local, timezone).getTime() + d.getUTCMilliseconds());
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return instantOf(`${value} 00:00:00`, timezone);
  const time = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(:\d{2})?)(\.\d+)?([zZ]|[+-]\d{2}:?\d{2})?$/.exec(value);
  if (time) {
    const local = `${time[1]} ${time[2]}${time[3] ? '' : ':00'}`;
    const parsed = time[5]
      ? new Date(`${time[1]}T${time[2]}${time[4] ?? ''}${time[5]}`)
      : new Date(instantOf(local, timezone).getTime() + Math.round(Number(time[4] ?? 0) * 1000));
    if (!Number.isNaN(parsed.getTime())) return parsed;
  }
  throw new QueryError(`"${text}" is not a date: use a date, a date-time or a relative date such as -7d.`, at);
}

const constant = (value: string | boolean): Node => ({ k: 'const', value, pos: at });
const dateNode = (d: Date): Node => ({
  k: 'call',
  name: 'toDateTime',
  args: [constant(d.toISOString())],
  distinct: false,
  star: false,
  pos: at,
});
const compare = (op: string, right: Node): Node => ({
  k: 'binop',
  op,
  left: { k: 'field', chain: ['timestamp'], pos: at },
  right,
  pos: at,
});

const isSelect = (v: Record<string, unknown>): v is Select & Record<string, unknown> =>
  Array.isArray(v.columns) && Array.isArray(v.joins) && 'from' in v;

const readsEvents = (s: Select) =>
  [s.from, ...s.joins.map((j) => j.item)].some((f) => f?.k === 'table' && f.name === 'events');

/** Property filters (the events listing's format, PostHog's property filter list) as one condition, if any. */
function propertiesNode(properties: unknown[]): Node | undefined {
  const tree = parsePropertyFilters(JSON.stringify(properties));
  return tree ? propertyFilterNode(tree) : undefined;
}

/**
 * PostHog's replace_filters for a HogQLQuery: `{filters}` becomes the filters' conditions on the
 * events it selects from (properties, then `timestamp < date_to` and `timestamp >= date_from`, then,
 * with `filterTestAccounts`, each of the project's `testAccountFilters`; true when there are none),
 * `{filters.dateRange.from}` and `{filters.dateRange.to}` become those dates, and a comparison with a
 * bound that is not set holds for every row.
 */
export function applyHogQLFilters(
  query: Query,
  filters: HogQLFilters | null | undefined,
  timezone: string,
  testAccountFilters: unknown[] = [],
): Query {
  const range = filters?.dateRange ?? null;
  const from = range?.date_from && range.date_from !== 'all' ? filterDate(range.date_from, timezone) : null;
  const to = range?.date_to ? filterDate(range.date_to, timezone) : null;
  const conditions = (): Node => {
    const exprs: Node[] = [];
    const properties = filters?.properties;
    const own = Array.isArray(properties) && properties.length ? propertiesNode(properties) : undefined;
    if (own) exprs.push(own);
    if (to) exprs.push(compare('<', dateNode(to)));
    if (from) exprs.push(compare('>=', dateNode(from)));
    if (filters?.filterTestAccounts === true) {
      for (const filter of testAccountFilters) {
        const test = propertiesNode([filter]);
        if (test) exprs.push(test);
      }
    }
    if (!exprs.length) return constant(true);
    return exprs.length === 1 ? exprs[0]! : { k: 'and', args: exprs, pos: at };
  };
  const unbound = (n: unknown) => {
    const p = n as { k?: string; name?: string };
    if (p?.k !== 'placeholder') return false;
    return (p.name === 'filters.dateRange.from' && !from) || (p.name === 'filters.dateRange.to' && !to);
  };

  const visit = (value: unknown, select: Select | null): unknown => {
    if (Array.isArray(value)) return value.map((v) => visit(v, select));
    if (!value || typeof value !== 'object') return value;
    const node = value as Record<string, unknown>;
    const inSelect = isSelect(node) ? node : select;
    if (node.k === 'placeholder' && typeof node.name === 'string' && node.name.split('.')[0] === 'filters') {
      const pos = node.pos as number;
      if (node.name === 'filters') {
        if (!inSelect || !readsEvents(inSelect))
          throw new QueryError(
            "Cannot use 'filters' placeholder in a SELECT clause that does not select from the events table.",
            pos,
          );
        return conditions();
      }
      if (node.name === 'filters.dateRange.from' && from) return dateNode(from);
      if (node.name === 'filters.dateRange.to' && to) return dateNode(to);
      const supported = '`{filters}`, `{filters.dateRange.from}`, `{filters.dateRange.to}`';
      if (node.name !== 'filters.dateRange.from' && node.name !== 'filters.dateRange.to')
        throw new QueryError(
          `Unsupported filters placeholder \`{${node.name}}\`. Supported filters placeholders are: ${supported}.`,
          pos,
        );
      throw new QueryError(
        `The \`{${node.name}}\` placeholder must be used directly in a comparison ` +
          `(e.g. \`timestamp > {${node.name}}\`), not nested inside a function call, when the date range is not set.`,
        pos,
      );
    }
    if (node.k === 'binop' && COMPARISONS.has(node.op as string) && (unbound(node.left) || unbound(node.right)))
      return { k: 'binop', op: '=', left: constant(true), right: constant(true), pos: node.pos };
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(node)) out[key] = visit(v, inSelect);
    return out;
  };
  return visit(query, null) as Query;
}

/**
 * A HogQLQuery's variables as placeholder values, `{variables.<code_name>}`, as PostHog's
 * replace_variables gives them.
 */
export function variableValues(variables: Record<string, unknown> | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of Object.values(variables ?? {})) {
    if (!v || typeof v !== 'object') continue;
    const { code_name, value } = v as HogQLVariable;
    if (typeof code_name === 'string' && code_name) out[`variables.${code_name}`] = value ?? null;
  }
  return out;
}
