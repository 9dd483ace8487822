// Which queries the events' hourly counts (event_counts, drizzle/0035) answer exactly, so that the compiler can
// read a few thousand counts instead of a million events. Anything this file does not know is read from events.
import type { Node, Query } from './ast.js';
import { isSet } from './ast.js';

/** Functions that may read `timestamp` (its first argument): each hour of counts falls in one of their buckets. */
const BUCKETS = new Set([
  'tostartofhour',
  'tostartofday',
  'tostartofweek',
  'tostartofmonth',
  'tostartofquarter',
  'tostartofyear',
]);
/** Functions of constants, or of `event`, that an answer from counts computes as an answer from events would. */
const PLAIN = new Set([
  'todatetime',
  'todate',
  'now',
  'today',
  'yesterday',
  'lower',
  'upper',
  'concat',
  'if',
  'coalesce',
  'startswith',
  ...[...BUCKETS],
]);
/** `timestamp >= x` and `timestamp < x` (or the same turned round) hold for an event iff for its hour, x whole. */
const LOWER = new Set(['>=']);
const UPPER = new Set(['<']);
const MIRROR: Record<string, string> = { '<=': '>=', '>': '<' };

const fieldName = (n: Node, table: string, alias: string | null): string | undefined => {
  if (n.k !== 'field') return undefined;
  const chain = n.chain.length === 2 && (n.chain[0] === alias || n.chain[0] === table) ? n.chain.slice(1) : n.chain;
  return chain.length === 1 ? chain[0] : undefined;
};

/**
 * Whether a query can be answered from the counts: one SELECT of `events` alone (no join, subquery, CTE or
 * window) that reads `event`, counts with `count()` and reads `timestamp` only in a bucket function
 * (`toStartOfDay(timestamp)`...) or in `timestamp >= x` / `timestamp < x` with x free of fields. The compiler
 * then also checks, in the statement, that each x is a whole UTC hour; zones whose offset is not whole hours
 * are never answered from counts (isWholeHourZone).
 */
export function answerableFromCounts(q: Query): boolean {
  if (isSet(q)) return false;
  if (q.ctes?.length || q.windows || q.distinct || q.joins.length || q.withTies) return false;
  if (q.from?.k !== 'table' || q.from.name !== 'events') return false;
  const { alias } = q.from;
  const name = (n: Node) => fieldName(n, 'events', alias);
  // A column's alias stands for its expression, which is checked as a column.
  const aliases = new Set(q.columns.map((c) => c.alias).filter((a): a is string => !!a));
  if (aliases.has('event') || aliases.has('timestamp')) return false;
  const free = (n: Node): boolean => {
    if (n.k === 'field') return false;
    return check(n, false);
  };
  function check(n: Node, timeAllowed: boolean): boolean {
    switch (n.k) {
      case 'const':
      case 'placeholder':
        return true;
      case 'field': {
        if (n.chain.length === 1 && aliases.has(n.chain[0]!)) return true;
        const f = name(n);
        return f === 'event' || (f === 'timestamp' && timeAllowed);
      }
      case 'call': {
        const fn = n.name.toLowerCase();
        if (n.over || n.params || n.distinct) return false;
        if (fn === 'count') return n.args.length === 0;
        if (!PLAIN.has(fn)) return false;
        return n.args.every((a, i) => check(a, i === 0 && BUCKETS.has(fn)));
      }
      case 'and':
      case 'or':
        return n.args.every((a) => check(a, false));
      case 'not':
      case 'neg':
        return check(n.arg, false);
      case 'binop': {
        const l = name(n.left) === 'timestamp';
        const r = name(n.right) === 'timestamp';
        if (l || r) {
          const op = r ? (MIRROR[n.op] ?? (n.op === '>=' || n.op === '<' ? '' : n.op)) : n.op;
          if (!LOWER.has(op) && !UPPER.has(op)) return false;
          return l ? free(n.right) : free(n.left);
        }
        return check(n.left, false) && check(n.right, false);
      }
      case 'in':
        return !n.sub && check(n.left, false) && (n.list ?? []).every((x) => check(x, false));
      case 'isnull':
        return check(n.arg, false);
      case 'interval':
        return check(n.value, false);
      case 'array':
        return n.items.every((x) => check(x, false));
      default:
        return false;
    }
  }
  const nodes: Node[] = [
    ...q.columns.map((c) => c.expr),
    ...q.groupBy,
    ...q.orderBy.map((o) => o.expr),
    ...(q.where ? [q.where] : []),
    ...(q.having ? [q.having] : []),
  ];
  return nodes.every((n) => check(n, false)) && q.columns.some((c) => containsCount(c.expr));
}

function containsCount(n: Node): boolean {
  if (n.k === 'call') return n.name.toLowerCase() === 'count' || n.args.some(containsCount);
  if (n.k === 'binop') return containsCount(n.left) || containsCount(n.right);
  return false;
}

const wholeHours = new Map<string, boolean>();

/**
 * Whether a zone's offset from UTC has been whole hours over the years events are kept for: then each UTC
 * hour of counts lies in one local day, week and month. Checked mid-January and mid-July of each year.
 */
export function isWholeHourZone(zone: string): boolean {
  const known = wholeHours.get(zone);
  if (known !== undefined) return known;
  let whole = true;
  try {
    const fmt = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    for (let year = 1990; year <= 2040 && whole; year++) {
      for (const month of [0, 6]) {
        const name = fmt.formatToParts(Date.UTC(year, month, 15)).find((p) => p.type === 'timeZoneName')?.value;
        const minutes = /GMT[+-]\d{2}:(\d{2})/.exec(name ?? '')?.[1];
        if (minutes !== undefined && minutes !== '00') whole = false;
      }
    }
  } catch {
    whole = false;
  }
  wholeHours.set(zone, whole);
  return whole;
}
