import { ApiError } from '../core/errors.js';
import { dateValue } from '../core/dates.js';
import { parsePropertyFilters, type FilterNode, type Scalar } from '../events/filters.js';
import { parseExpression, parseOrder, QueryError, type Node, type Select } from '../hogql/index.js';

/** PostHog's EventsQuery, trimmed to what this server answers. */
export interface EventsQuery {
  kind: 'EventsQuery';
  select: string[];
  where?: string[] | null;
  orderBy?: string[] | null;
  properties?: unknown[] | null;
  event?: string | null;
  after?: string | null;
  before?: string | null;
  personId?: string | null;
  filterTestAccounts?: boolean | null;
  limit?: number | null;
  offset?: number | null;
}

const AGGREGATES = new Set(['count', 'countif', 'uniq', 'uniqexact', 'sum', 'avg', 'min', 'max']);
const at = 0;

async function expression(attr: string, text: string): Promise<Node> {
  const t = text.trim();
  if (t === '*') return { k: 'object', of: 'event', pos: at };
  if (t === 'person') return { k: 'object', of: 'person', pos: at };
  try {
    return await parseExpression(text);
  } catch (err) {
    if (err instanceof QueryError) throw ApiError.validation(attr, `${err.message}: ${text}`, err.code);
    throw err;
  }
}

function hasAggregate(n: Node): boolean {
  switch (n.k) {
    case 'call':
      return AGGREGATES.has(n.name.toLowerCase()) || n.args.some(hasAggregate);
    case 'binop':
      return hasAggregate(n.left) || hasAggregate(n.right);
    case 'and':
    case 'or':
      return n.args.some(hasAggregate);
    case 'not':
    case 'neg':
    case 'isnull':
      return hasAggregate(n.arg);
    case 'case':
      return (
        n.branches.some(([c, v]) => hasAggregate(c) || hasAggregate(v)) ||
        (n.otherwise ? hasAggregate(n.otherwise) : false)
      );
    default:
      return false;
  }
}

const field = (...chain: string[]): Node => ({ k: 'field', chain, pos: at });
const value = (v: Scalar | null): Node => ({ k: 'const', value: v, pos: at });
const call = (name: string, ...args: Node[]): Node => ({
  k: 'call',
  name,
  args,
  distinct: false,
  star: false,
  pos: at,
});
const binop = (op: string, left: Node, right: Node): Node => ({ k: 'binop', op, left, right, pos: at });
const not = (arg: Node): Node => ({ k: 'not', arg: call('ifNull', arg, value(false)), pos: at });

/** A property filter (the events listing's `properties` format) as a HogQL condition, as PostHog builds one. */
export function propertyFilterNode(f: FilterNode): Node {
  if (f.kind === 'group') {
    if (!f.values.length) return value(true);
    return { k: f.op === 'AND' ? 'and' : 'or', args: f.values.map(propertyFilterNode), pos: at };
  }
  const x = f.type === 'person' ? field('person', 'properties', f.key) : field('properties', f.key);
  const values = (Array.isArray(f.value) ? f.value : [f.value]) as Scalar[];
  const single = values[0]!;
  const like = () => binop('ILIKE', x, value(`%${String(single).replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  const eq = (): Node =>
    values.length === 1
      ? binop('=', x, value(single))
      : { k: 'in', left: x, list: values.map(value), sub: null, negated: false, pos: at };
  const dateOf = () => value(dateValue(single)!);
  switch (f.operator) {
    case 'exact':
      return eq();
    case 'is_not':
      return not(eq());
    case 'icontains':
      return like();
    case 'not_icontains':
      return not(like());
    case 'regex':
      return call('match', x, value(String(single)));
    case 'not_regex':
      return not(call('match', x, value(String(single))));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return binop({ gt: '>', gte: '>=', lt: '<', lte: '<=' }[f.operator], x, value(Number(single)));
    case 'is_set':
      return { k: 'isnull', arg: x, negated: true, pos: at };
    case 'is_not_set':
      return { k: 'isnull', arg: x, negated: false, pos: at };
    case 'is_date_before':
      return binop('<', call('toDateTime', x), dateOf());
    case 'is_date_after':
      return binop('>', call('toDateTime', x), dateOf());
    case 'is_date_exact':
      return binop('=', call('toDateTime', x), dateOf());
  }
}

function bound(attr: 'after' | 'before', text: string): Node {
  const iso = dateValue(text);
  if (!iso) throw ApiError.validation(attr, `${attr} must be an ISO 8601 date-time or a relative time such as -24h.`);
  // A date or date-time without an offset is the project's wall clock, as PostHog's runner reads it (a naive
  // datetime printed in the team's timezone); the compiler reads such text compared with `timestamp` so.
  const naive = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$/.test(text.trim());
  return binop(attr === 'after' ? '>' : '<', field('timestamp'), value(naive ? text.trim() : iso));
}

/** An ORDER BY entry as PostHog reads it (`timestamp DESC`); `-timestamp` is the events listing's DESC. */
async function orderItem(text: string): Promise<{ expr: Node; desc: boolean }> {
  const t = text.trim();
  if (t.startsWith('-')) return { expr: await expression('orderBy', t.slice(1)), desc: true };
  try {
    return await parseOrder(t);
  } catch (err) {
    if (err instanceof QueryError) throw ApiError.validation('orderBy', `${err.message}: ${text}`, err.code);
    throw err;
  }
}

/**
 * The HogQL SELECT an EventsQuery stands for: its columns, its conditions ANDed, grouped by the
 * plain columns when any column aggregates, newest first unless it says otherwise.
 */
export async function eventsSelect(q: EventsQuery, testAccountFilters: unknown[] = []): Promise<Select> {
  if (!q.select.length) throw ApiError.validation('select', 'Select at least one column.');
  const columns = await Promise.all(
    q.select.map(async (text) => ({ expr: await expression('select', text), alias: null })),
  );
  const where: Node[] = await Promise.all((q.where ?? []).map((text) => expression('where', text)));
  if (q.event) where.push(binop('=', field('event'), value(q.event)));
  if (q.personId) where.push(binop('=', field('person_id'), value(q.personId)));
  if (q.after && q.after !== 'all') where.push(bound('after', q.after));
  if (q.before) where.push(bound('before', q.before));
  // The project's test account filters (with filterTestAccounts) are ANDed with the query's own.
  for (const list of [q.properties ?? [], q.filterTestAccounts === true ? testAccountFilters : []]) {
    const filters = list.length ? parsePropertyFilters(JSON.stringify(list)) : undefined;
    if (filters) where.push(propertyFilterNode(filters));
  }
  const aggregated = columns.some((c) => hasAggregate(c.expr));
  const groupBy = aggregated ? columns.filter((c) => !hasAggregate(c.expr)).map((c) => c.expr) : [];
  if (groupBy.some((g) => g.k === 'object'))
    throw ApiError.validation('select', '* and person cannot be selected together with an aggregation.');
  const orderBy = q.orderBy?.length
    ? await Promise.all(q.orderBy.map(orderItem))
    : aggregated
      ? []
      : [{ expr: field('timestamp'), desc: true }];
  return {
    distinct: false,
    columns,
    from: { k: 'table', name: 'events', alias: null, pos: at },
    joins: [],
    where: where.length ? (where.length === 1 ? where[0]! : { k: 'and', args: where, pos: at }) : null,
    groupBy,
    having: null,
    orderBy,
    limit: q.limit !== undefined && q.limit !== null ? value(q.limit) : null,
    offset: q.offset ? value(q.offset) : null,
  };
}
